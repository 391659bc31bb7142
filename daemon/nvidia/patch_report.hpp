#pragma once
// What GNU patch said when a profile's patch was tried against the staged tree: which hunks of which
// files failed, which files were missing, whether the patch was already applied. Pure: text in, a
// verdict and an operator's sentence out (lifecycle/patch_check.cpp runs patch).
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode::nvidia {

struct HunkFailure {
  std::string file;  // as patch named it ("patching file X")
  int hunk = 0;      // 1-based, within that file
  long line = 0;     // where patch looked for it
};

struct PatchOutcome {
  std::vector<HunkFailure> failed;
  std::vector<std::string> missing;  // files the patch changes that the tree lacks
  bool reversed = false;             // "Reversed (or previously applied) patch detected"
  std::string garbage;               // "malformed patch …" / "Only garbage …": patch's own words
  int fuzzed = 0;                    // hunks applied with fuzz (DKMS accepts them too)
  bool clean() const { return failed.empty() && missing.empty() && !reversed && garbage.empty(); }
};

// Reads patch's stdout+stderr (-p1 --batch --forward, as lifecycle/patch_check.cpp runs it).
PatchOutcome read_patch_output(std::string_view out);

// The hunks of a reject file (patch -r FILE), each with its own "--- / +++" file lines, in order.
std::vector<std::string> reject_hunks(std::string_view rej);

// Every file a unified diff reads or writes, relative to the tree (-p1): both sides of "---"/"+++"
// and git's "rename from"/"copy from" sources; /dev/null left out.
std::vector<std::string> patch_inputs(std::string_view diff);

// "patch 02-p2p.patch does not apply to NVIDIA 595.45.04: hunk #3 of src/…/g_kern_bus_nvoc.c FAILED
// at 1214 (2 of 7 hunks failed in 1 file) …" followed by the first rejected hunk (at most max_lines).
std::string describe_patch_failure(const std::string& patch, const std::string& tree, const PatchOutcome& o,
                                   const std::vector<std::string>& rejects, std::size_t max_lines = 24);

}  // namespace p2pnode::nvidia
