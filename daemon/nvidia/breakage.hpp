#pragma once
// The known-breakage table (daemon/nvidia/breakages.yaml, compiled in) and the pure matchers that
// turn a failed build's make.log into a named cause and remediation, and a kernel (its release
// and header text) into "this breakage applies here". No I/O: callers pass the text.
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace p2pnode::nvidia {

// How a header file shows the breakage: `pattern` matches a copy of the file (matches), matches no
// readable copy (lacks), or the file is in no copy of whole headers (absent: a header the kernel removed).
enum class HeaderTestKind { matches, lacks, absent };
struct HeaderTest {
  std::string file;     // include/linux/pci.h (relative to the headers' build/ or source/)
  std::string pattern;  // ECMAScript regex over the whole file (empty for absent)
  HeaderTestKind kind = HeaderTestKind::matches;
};

// build: the module does not build; runtime: it builds and loads, a feature then fails; display:
// it builds and loads, and only a GPU that drives the console is affected (no P2P path: check notes
// it, never warns).
enum class BreakageStage { build, runtime, display };

// What a tree's own source says: affected when `file` (relative to the tree) exists and matches
// `uses` but not `fixed` (a tree that carries its own fix, e.g. NVIDIA's later conftest).
struct SourceTest {
  std::string file, uses, fixed;
};

// The newest NVIDIA release whose source was read and built here (the table's tag claims go up to
// it; later releases are known from public reports only, each claim saying which).
inline constexpr std::string_view kNewestReleaseChecked = "595.45.04";

// Where a fact of the table comes from: a build here (which tree, which headers, which script), an
// NVIDIA tag's own source (the entry's source test on that tag's file: tests/fixtures/nvidia-tags),
// or a public report (owner/repo#N and what it says).
enum class EvidenceKind { build, tag, report };
struct Evidence {
  EvidenceKind kind = EvidenceKind::report;
  std::string ref;               // build: what was built and how; tag: what the file shows; report: owner/repo#N
  std::string says;              // report: what it says (required); otherwise empty
  std::string describe() const;  // "build here: …", "NVIDIA's tag: …", "NVIDIA/open-gpu-kernel-modules#1224: …"
};
// A release known to be affected, or to carry the fix, and how that is known.
struct ReleaseClaim {
  std::string release;
  Evidence evidence;
};
// The kernel change behind the entry: the release that brought it (where known), its commit and the source.
struct Introduced {
  std::string kernel;  // "7.2"; empty where no release is established (a stable backport)
  std::string commit;  // "1a3746ccbb0a"; may be empty
  Evidence evidence;
};

struct Breakage {
  std::string id;
  std::optional<std::string> signature;  // regex over one make.log line; absent: fails at run time
  BreakageStage stage = BreakageStage::build;
  std::vector<std::string> branches;                  // driver.version prefixes; empty = all (a branch newer than
                                                      // every listed one counts too: not read when the list was made)
  std::optional<std::string> kernel_min, kernel_max;  // "6.10", inclusive
  std::optional<HeaderTest> headers;
  std::optional<SourceTest> source;
  std::string cause;
  std::optional<Introduced> introduced;
  std::vector<ReleaseClaim> affected;      // releases known to hit it: the forecast claims no further
  std::vector<ReleaseClaim> fixed;         // releases that carry the fix, one per branch
  std::vector<std::string> fixed_in;       // the releases of `fixed`
  std::optional<std::string> fix_builtin;  // patch name under daemon/nvidia/patches/
  std::string no_builtin_why;              // fix: {none: why}: why there is no builtin patch
  std::string remediation;
};

// Parses the table; errors name the entry (index and id), the field and what was expected.
Result<std::vector<Breakage>> parse_breakages(std::string_view yaml_text, std::string_view origin);
// The table compiled into the binary (parsed once; a broken table is a build-time test failure).
const std::vector<Breakage>& builtin_breakages();
const Breakage* find_breakage(const std::vector<Breakage>& table, std::string_view id);
// The text of a builtin patch ("pci-resize-resource-exclude-bars"), or nullopt.
std::optional<std::string_view> builtin_patch(std::string_view name);
std::vector<std::string> builtin_patch_names();

struct BreakageMatch {
  const Breakage* breakage = nullptr;
  int line = 0;          // 1-based line of make.log that matched
  std::string log_line;  // that line, trimmed
  // "known breakage pci-resize-resource-exclude-bars: <cause> Fix: <remediation>"
  std::string describe() const;
};

// Every entry whose signature matches a line of the make.log (first matching line each), in table
// order. driver_version narrows by branches (empty: every entry is considered).
std::vector<BreakageMatch> match_make_log(const std::vector<Breakage>& table, std::string_view make_log,
                                          std::string_view driver_version = {});

// "6.1.0-56-amd64" -> {6,1,0}; nullopt when it does not start with a number.
std::optional<std::vector<int>> kernel_version_numbers(std::string_view release);
bool branch_affected(const Breakage& b, std::string_view driver_version);
// Release in [kernel_min, kernel_max] (true when neither bound is set).
bool kernel_in_range(const Breakage& b, std::string_view kernel_release);
// The header test on the header file's text (true when the entry has none).
bool headers_affected(const Breakage& b, std::string_view header_text);
// The header test on the copies of the file in the kernel's build/ and source/ (nullopt: not
// there); headers_whole: the kernel's headers are there to tell a removed file from a missing
// package (the probe: include/linux/module.h exists). nullopt: cannot be judged (no copy to read,
// or for absent, headers not whole).
std::optional<bool> headers_affected(const Breakage& b, const std::vector<std::optional<std::string>>& copies,
                                     bool headers_whole);
// The release carries the entry's fix (fixed_in): same branch and not older than the named release,
// or a branch newer than every named one. False when the entry names none.
bool fixed_by_release(const Breakage& b, std::string_view driver_version);
// What the table knows of a driver version, from the version alone: not in an affected branch;
// fixed (fixed_by_release); affected (below its branch's fix and at or below the newest release
// known to be affected); or beyond (newer than every release known to be affected, with no fix
// recorded for it: the evidence says nothing, the tree's source decides). An entry that lists no
// affected release (a test table) has no such bound.
enum class Knowledge { not_affected, fixed, affected, beyond };
Knowledge release_knowledge(const Breakage& b, std::string_view driver_version);
// The entry is known to apply to this driver version (release_knowledge is affected).
bool release_affected(const Breakage& b, std::string_view driver_version);
// The newest release the entry lists as affected ("" when none).
std::string newest_affected(const Breakage& b);
// What is missing from the entry's evidence ("affected: none listed", "fixed_in[0] (580.178.04):
// a report without says"); empty when every claim carries its source.
std::vector<std::string> missing_evidence(const Breakage& b);
// The first NVIDIA release (from the table's fixed_in) known to get past every given build-stage
// entry (each one not in its branch, or fixed there); nullopt when none is known to.
std::optional<std::string> first_release_past(const std::vector<const Breakage*>& stops);
// The source test on the tree's file (nullopt: the tree has no such file, so it is not affected);
// true when the entry has no source test.
bool source_affected(const Breakage& b, std::optional<std::string_view> file_text);

// A known breakage the build of a driver version for one kernel will hit, judged before any build
// from the table, the kernel's release and its header tests, and the tree's source where read.
struct PredictedBreakage {
  const Breakage* breakage = nullptr;
  bool fixed = false;  // the profile names the builtin patch that fixes it
  // "known breakage X will stop the build of 570.86.16 on 6.12.117+deb13-amd64: <cause>" (stage
  // build) or "… will break 570.86.16 on …" (stage runtime)
  std::string describe(std::string_view driver_version, std::string_view kernel_release) const;
};
// header_tests: breakage id -> headers_affected() on that kernel's header file, for the entries
// that have a header test (an entry whose test is missing from the map is not predicted: without
// its header the build cannot run either). profile_builtins: the builtin patches the profile names.
// source_tests: breakage id -> source_affected() on the tree, where its source was read (null: by
// the version alone).
// A version the table knows nothing of (Knowledge::beyond) is predicted only where the tree's source
// was read and says so; beyond_evidence() lists the others.
std::vector<PredictedBreakage> predict_breakages(const std::vector<Breakage>& table, std::string_view driver_version,
                                                 std::string_view kernel_release,
                                                 const std::map<std::string, bool>& header_tests,
                                                 const std::vector<std::string>& profile_builtins,
                                                 const std::map<std::string, bool>* source_tests = nullptr);
// The entries whose kernel change this kernel has (its header test) and of which nothing is known for
// this driver version (Knowledge::beyond), the tree's source not read: neither a stop nor cleared.
// The profile's builtin patches count as a fix (such an entry is left out).
std::vector<const Breakage*> beyond_evidence(const std::vector<Breakage>& table, std::string_view driver_version,
                                             std::string_view kernel_release,
                                             const std::map<std::string, bool>& header_tests,
                                             const std::vector<std::string>& profile_builtins,
                                             const std::map<std::string, bool>* source_tests = nullptr);

// A DKMS PATCH_MATCH regex (bash =~ on the kernel release) for the entry's kernel range, or "" when
// it has no kernel_min/kernel_max (only kernel_min is supported: "6.10" -> ^(6\.[1-9][0-9]|…)\.).
std::string dkms_patch_match(const Breakage& b);

}  // namespace p2pnode::nvidia
