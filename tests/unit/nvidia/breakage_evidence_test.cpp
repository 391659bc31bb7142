// The breakage table's evidence: every entry says where each of its facts comes from, every claim
// read from an NVIDIA tag holds on that tag's own source (recorded in tests/fixtures/nvidia-tags.tar.xz
// by scripts/record-nvidia-tags.sh), and the forecast claims a breakage from a version alone only
// as far as that evidence goes: the releases users run in 2026 on Debian's real 6.12, 7.2 and 7.3
// headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "nvidia/breakage.hpp"
#include "nvidia/forecast.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::nvidia {
namespace {
namespace fs = std::filesystem;

std::string evidence_slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The header tests of every entry on a kernel's recorded header lines (tests/fixtures/kernel-headers).
std::map<std::string, bool> evidence_headers(const std::string& k) {
  const fs::path dir = fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures/kernel-headers/lib/modules" / k;
  std::map<std::string, bool> out;
  for (const auto& b : builtin_breakages()) {
    if (!b.headers) { continue; }
    std::vector<std::optional<std::string>> copies;
    bool whole = false;
    for (const char* side : {"build", "source"}) {
      const fs::path f = dir / side / b.headers->file;
      copies.push_back(fs::is_regular_file(f) ? std::optional<std::string>(evidence_slurp(f)) : std::nullopt);
      whole = whole || fs::is_regular_file(dir / side / "include/linux/module.h");
    }
    if (const auto v = headers_affected(b, copies, whole)) { out[b.id] = *v; }
  }
  return out;
}

struct Forecast {
  std::vector<std::string> stops, runtime, display, beyond;
};
Forecast forecast(const std::string& version, const std::string& k, const std::vector<std::string>& builtins = {}) {
  const auto h = evidence_headers(k);
  Forecast out;
  for (const auto& p : predict_breakages(builtin_breakages(), version, k, h, builtins)) {
    if (p.fixed) { continue; }
    (p.breakage->stage == BreakageStage::build     ? out.stops
     : p.breakage->stage == BreakageStage::runtime ? out.runtime
                                                   : out.display)
        .push_back(p.breakage->id);
  }
  for (const auto* b : beyond_evidence(builtin_breakages(), version, k, h, builtins)) { out.beyond.push_back(b->id); }
  return out;
}
using Ids = std::vector<std::string>;
const std::string kEv612 = "6.12.117+deb13-amd64", kEv72 = "7.2.13+deb14-amd64", kEv73 = "7.3.4+deb13-amd64";

TEST(BreakageEvidence, EveryEntryCarriesItsEvidence) {
  ASSERT_GE(builtin_breakages().size(), 20u);
  for (const auto& b : builtin_breakages()) {
    const auto missing = missing_evidence(b);
    EXPECT_TRUE(missing.empty()) << b.id << ": " << (missing.empty() ? "" : missing.front());
    for (const auto& c : b.affected) {
      EXPECT_TRUE(release_affected(b, c.release) || !branch_affected(b, c.release))
          << b.id << ": listed as affected, yet " << c.release << " is not";
    }
    for (const auto& c : b.fixed) {
      EXPECT_EQ(release_knowledge(b, c.release), Knowledge::fixed) << b.id << " " << c.release;
    }
  }
}

TEST(BreakageEvidence, AnEntryWithoutEvidenceIsNamedAndAClaimNeedsItsSource) {
  const auto t = parse_breakages(
      "breakages:\n  - {id: bare, kernels: {min: \"6.1\"}, cause: c, remediation: r, fixed_in: [\"570.1\"]}\n",
      "t.yaml");
  ASSERT_TRUE(t) << t.error().message;
  const auto m = missing_evidence(t->at(0));
  EXPECT_EQ(m,
            (Ids{"introduced: missing (the kernel change, its release or commit, and the source)",
                 "affected: no release listed as affected", "fixed_in[0] (570.1): no source (build, tag or report)"}));
  auto bad = parse_breakages(
      "breakages:\n  - {id: x, kernels: {min: \"6.1\"}, cause: c, remediation: r,\n"
      "     affected: [{release: \"570.1\", report: \"a/b#1\"}]}\n",
      "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "t.yaml: breakages[0] (x): affected[0] (570.1): a report needs says: what it says");
  bad = parse_breakages(
      "breakages:\n  - {id: x, kernels: {min: \"6.1\"}, cause: c, remediation: r,\n"
      "     fixed_in: [{release: \"570.1\", tag: t, build: b}]}\n",
      "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "t.yaml: breakages[0] (x): fixed_in[0] (570.1): expected exactly one source: build, tag or report");
  bad = parse_breakages(
      "breakages:\n  - {id: x, kernels: {min: \"6.1\"}, cause: c, remediation: r, introduced: {kernel: seven, build: "
      "b}}\n",
      "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "t.yaml: breakages[0] (x): introduced.kernel: 'seven' is not a kernel version like 6.10");
}

// Each tag claim on the tag's own file: an affected release's file still has the old code (the
// entry's source test says affected), a fixed release's does not.
TEST(BreakageEvidence, EveryTagClaimHoldsOnTheTagsOwnSource) {
  const fs::path archive = fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures/nvidia-tags.tar.xz";
  ASSERT_TRUE(fs::is_regular_file(archive)) << archive;
  const p2pnode::test::TempDir scratch("nvidia-tags");
  const fs::path dir = scratch.path();
  ASSERT_EQ(std::system(("tar -xJf '" + archive.string() + "' -C '" + dir.string() + "'").c_str()), 0);
  int checked = 0;
  for (const auto& b : builtin_breakages()) {
    auto hold = [&](const ReleaseClaim& c, bool affected) {
      if (c.evidence.kind != EvidenceKind::tag) { return; }
      ASSERT_TRUE(b.source) << b.id << ": a tag claim without a source test";
      const fs::path f = dir / c.release / b.source->file;
      ASSERT_TRUE(fs::is_regular_file(f)) << f << ": run scripts/record-nvidia-tags.sh";
      const std::string text = evidence_slurp(f);
      EXPECT_EQ(source_affected(b, std::string_view(text)), affected)
          << b.id << ": " << c.release << " is listed as " << (affected ? "affected" : "fixed") << " ("
          << c.evidence.ref << "), its " << b.source->file << " says otherwise";
      ++checked;
    };
    for (const auto& c : b.affected) { hold(c, true); }
    for (const auto& c : b.fixed) { hold(c, false); }
  }
  EXPECT_GE(checked, 50);
}

// What users install in 2026 on Debian 13 with trixie-backports' 7.3.4 (and sid's 7.2.13): no
// breakage claimed that a release fixes, nothing claimed past the evidence.
TEST(BreakageEvidence, TodaysReleasesOn73) {
  for (const auto& k : {kEv73, kEv72}) {
    SCOPED_TRACE(k);
    // 610.57.04 fixes strncpy and drm_atomic_state (NVIDIA#1227), of_gpio.h since 610.43.02; the
    // BTF step is known up to 595.45.04 only: not claimed, said.
    auto f = forecast("610.57.04", k);
    EXPECT_EQ(f.stops, Ids{});
    EXPECT_EQ(f.beyond, Ids{"pahole-awk-gen-btf"});
    EXPECT_EQ(f.display, Ids{});  // screen_info: fixed in 610.57.04
    EXPECT_EQ(forecast("610.57.04", k, {"pahole-awk-gen-btf"}).beyond, Ids{});
    // 580.178.04: of_gpio (580.159.04), strncpy and drm_atomic_state (580.178.04) fixed; every 580 tag
    // has the awk PAHOLE program and no fix is recorded: that stop has a builtin.
    f = forecast("580.178.04", k);
    EXPECT_EQ(f.stops, Ids{"pahole-awk-gen-btf"});
    EXPECT_EQ(f.beyond, Ids{});
    // 580.173.02 fixed of_gpio.h only.
    EXPECT_EQ(forecast("580.173.02", k).stops,
              (Ids{"strncpy-removed", "drm-atomic-state-renamed", "pahole-awk-gen-btf"}));
    // 590.48.01 is still flagged: no 590 release is known to fix any of them.
    EXPECT_EQ(forecast("590.48.01", k).stops,
              (Ids{"dev-pagemap-page-free-renamed", "of-gpio-h-removed", "strncpy-removed", "drm-atomic-state-renamed",
                   "pahole-awk-gen-btf"}));
    // 595.71.05 (aikitoria's 595.71.05-p2p): strncpy and drm_atomic_state are fixed only from 595.91.07;
    // of_gpio.h and the BTF step are known up to 595.45.04: not claimed.
    f = forecast("595.71.05", k);
    EXPECT_EQ(f.stops, (Ids{"strncpy-removed", "drm-atomic-state-renamed"}));
    EXPECT_EQ(f.beyond, (Ids{"of-gpio-h-removed", "pahole-awk-gen-btf"}));
    EXPECT_EQ(f.display, Ids{"screen-info-sysfb"});
    EXPECT_EQ(forecast("595.58.03", k).stops, (Ids{"strncpy-removed", "drm-atomic-state-renamed"}));
    f = forecast("595.91.07", k);
    EXPECT_EQ(f.stops, Ids{});
    EXPECT_EQ(f.beyond, (Ids{"pahole-awk-gen-btf", "screen-info-sysfb"}));
    // 610.43.02/03 fail on 7.2 (NVIDIA#1224): strncpy and drm_atomic_state; of_gpio.h fixed.
    EXPECT_EQ(forecast("610.43.03", k).stops, (Ids{"strncpy-removed", "drm-atomic-state-renamed"}));
    EXPECT_EQ(forecast("610.43.02", k).stops, (Ids{"strncpy-removed", "drm-atomic-state-renamed"}));
    // 615.71.09: a branch newer than every fix of the 7.x entries; the BTF step is not known either way.
    f = forecast("615.71.09", k);
    EXPECT_EQ(f.stops, Ids{});
    EXPECT_EQ(f.beyond, Ids{"pahole-awk-gen-btf"});
    // 595.45.04, built here: the four stops, each with its builtin; with them, nothing.
    EXPECT_EQ(forecast("595.45.04", k).stops,
              (Ids{"of-gpio-h-removed", "strncpy-removed", "drm-atomic-state-renamed", "pahole-awk-gen-btf"}));
    f = forecast("595.45.04", k,
                 {"of-gpio-h-removed", "strncpy-removed", "drm-atomic-state-renamed", "pahole-awk-gen-btf"});
    EXPECT_EQ(f.stops, Ids{});
    EXPECT_EQ(f.beyond, Ids{});
    EXPECT_EQ(f.display, Ids{"screen-info-sysfb"});  // a note, not a stop, not a warning
  }
}

TEST(BreakageEvidence, TodaysReleasesOn612) {
  for (const auto* v : {"580.173.02", "580.178.04", "590.48.01", "595.58.03", "595.71.05", "595.91.07", "610.43.02",
                        "610.43.03", "610.57.04", "615.71.09", "580.142", "595.45.04"}) {
    const auto f = forecast(v, kEv612);
    EXPECT_EQ(f.stops, Ids{}) << v;
    EXPECT_EQ(f.beyond, Ids{}) << v;
    EXPECT_EQ(f.display, Ids{}) << v;
  }
}

// A branch newer than every one an entry lists was never read when the list was made: not cleared
// by default (pahole-awk-gen-btf lists 575-595; 610 has no word either way), while older branches
// that never had the code stay clear (550 has no awk PAHOLE program).
TEST(BreakageEvidence, NewerBranchesAreBeyondNotCleared) {
  const auto* pahole = find_breakage(builtin_breakages(), "pahole-awk-gen-btf");
  ASSERT_NE(pahole, nullptr);
  EXPECT_EQ(release_knowledge(*pahole, "610.57.04"), Knowledge::beyond);
  EXPECT_EQ(release_knowledge(*pahole, "595.45.04"), Knowledge::affected);
  EXPECT_EQ(release_knowledge(*pahole, "595.71.05"), Knowledge::beyond);
  EXPECT_EQ(release_knowledge(*pahole, "570.86.16"), Knowledge::not_affected);
  const auto* strncpy = find_breakage(builtin_breakages(), "strncpy-removed");
  EXPECT_EQ(release_knowledge(*strncpy, "610.57.04"), Knowledge::fixed);
  EXPECT_EQ(release_knowledge(*strncpy, "615.71.09"), Knowledge::fixed);      // a branch past every fix
  EXPECT_EQ(release_knowledge(*strncpy, "610.43.03"), Knowledge::affected);   // NVIDIA#1224
  EXPECT_EQ(release_knowledge(*strncpy, "580.173.02"), Knowledge::affected);  // below 580.178.04
  // Where the tree's source was read it decides, beyond the evidence too.
  const auto h = evidence_headers(kEv73);
  const std::map<std::string, bool> old_makefile{{"pahole-awk-gen-btf", true}};
  const auto p = predict_breakages(builtin_breakages(), "610.57.04", kEv73, h, {}, &old_makefile);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].breakage->id, "pahole-awk-gen-btf");
  EXPECT_TRUE(beyond_evidence(builtin_breakages(), "610.57.04", kEv73, h, {}, &old_makefile).empty());
  const std::map<std::string, bool> fixed_makefile{{"pahole-awk-gen-btf", false}};
  EXPECT_TRUE(predict_breakages(builtin_breakages(), "610.57.04", kEv73, h, {}, &fixed_makefile).empty());
  EXPECT_TRUE(beyond_evidence(builtin_breakages(), "610.57.04", kEv73, h, {}, &fixed_makefile).empty());
}

// On 7.3.4 no release is known to build as released (the BTF step has no recorded fix); on 6.12 the
// first is 580.126.09 (exclude_bars); with 7.2's renames and no BTF step (a kernel without gen-btf.sh)
// 580.178.04.
TEST(BreakageEvidence, TheFirstReleaseKnownToBuild) {
  EXPECT_EQ(first_release_past(build_entries_on_kernel(kEv73, evidence_headers(kEv73))), std::nullopt);
  EXPECT_EQ(first_release_past(build_entries_on_kernel(kEv612, evidence_headers(kEv612))),
            std::optional<std::string>("580.126.09"));
  auto h = evidence_headers(kEv73);
  h["pahole-awk-gen-btf"] = false;
  EXPECT_EQ(first_release_past(build_entries_on_kernel(kEv73, h)), std::optional<std::string>("580.178.04"));
}

TEST(BreakageEvidence, ObjtoolWerrorOnlyWhereTheKernelsConfigSetsIt) {
  for (const auto& k : {kEv612, kEv72, kEv73}) { EXPECT_FALSE(evidence_headers(k).at("objtool-werror-core")) << k; }
  const auto* b = find_breakage(builtin_breakages(), "objtool-werror-core");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(headers_affected(*b, {std::string("CONFIG_OBJTOOL=y\nCONFIG_OBJTOOL_WERROR=y\n"), std::nullopt}, true),
            true);
  EXPECT_EQ(
      match_make_log(
          builtin_breakages(),
          "nvidia/nv-kernel.o: error: objtool: _nv012345rm+0x1f: 'naked' return found in MITIGATION_RETHUNK build\n",
          "595.58.03")
          .at(0)
          .breakage->id,
      "objtool-werror-core");
}

}  // namespace
}  // namespace p2pnode::nvidia
