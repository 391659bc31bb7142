#include "nvidia/breakage.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "dkms/status.hpp"

namespace p2pnode::nvidia {
namespace {
namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const fs::path kLogs = fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures/make-logs";

TEST(Breakages, BuiltinTableParsesAndEveryFixIsABuiltinPatch) {
  const auto& t = builtin_breakages();
  ASSERT_NE(find_breakage(t, "pci-resize-resource-exclude-bars"), nullptr);
  ASSERT_NE(find_breakage(t, "io-memory-pfn"), nullptr);
  for (const auto& b : t) {
    // Every entry has its builtin patch, or says why it has none.
    ASSERT_TRUE(b.fix_builtin || !b.no_builtin_why.empty()) << b.id;
    if (!b.fix_builtin) { continue; }
    EXPECT_TRUE(builtin_patch(*b.fix_builtin)) << b.id << " names a patch that is not compiled in";
  }
  for (const auto& b : t) {
    EXPECT_FALSE(b.cause.empty());
    EXPECT_FALSE(b.remediation.empty());
  }
  const auto names = builtin_patch_names();
  EXPECT_EQ(names, (std::vector<std::string>{"pci-resize-resource-exclude-bars", "io-memory-pfn",
                                             "peer-address-alignment", "drm-output-poll-changed", "of-gpio-h-removed",
                                             "strncpy-removed", "drm-atomic-state-renamed", "pahole-awk-gen-btf"}));
  // The compiled-in copy is the file in the repository.
  EXPECT_EQ(std::string(*builtin_patch("io-memory-pfn")),
            read(fs::path(P2PNODE_SOURCE_DIR) / "daemon/nvidia/patches/io-memory-pfn.patch"));
}

// A real make.log: 550.90.07-p2p unpatched against Debian 12's 6.1.0-56-amd64 headers
// (tests/fixtures/make-logs/README.md says how it was recorded).
TEST(Breakages, RecordedMakeLogIsThePciResizeBreakage) {
  const auto log = read(kLogs / "550.90.07-p2p-6.1.0-56-amd64.make.log");
  ASSERT_FALSE(log.empty());
  const auto m = match_make_log(builtin_breakages(), log, "550.90.07");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].breakage->id, "pci-resize-resource-exclude-bars");
  // GCC quoted the name with ‘’ (UTF-8 locale) in the recorded log.
  EXPECT_NE(m[0].log_line.find("nv-pci.c:234:9: error: too few arguments to function \xE2\x80\x98pci_resize_resource"),
            std::string::npos)
      << m[0].log_line;
  EXPECT_GT(m[0].line, 1);
  const auto d = m[0].describe();
  EXPECT_NE(d.find("{builtin: pci-resize-resource-exclude-bars}"), std::string::npos) << d;
  // The first compiler error the report already shows is the same line.
  const auto first = dkms::first_compiler_error(log);
  ASSERT_TRUE(first);
  EXPECT_NE(first->find("pci_resize_resource"), std::string::npos);
}

TEST(Breakages, SameBreakageOn565AndNotOnAnUnlistedBranch) {
  // The line measured with 565.57.01-p2p on the same headers (GCC 12 quotes with ‘’ in a
  // UTF-8 locale, ' in C).
  const std::string log =
      "  CC [M]  /var/lib/dkms/nvidia-p2p/565.57.01/build/kernel-open/nvidia/nv-pci.o\n"
      "/var/lib/dkms/nvidia-p2p/565.57.01/build/kernel-open/nvidia/nv-pci.c:239:9: error: too few arguments to "
      "function \xE2\x80\x98pci_resize_resource\xE2\x80\x99\n";
  ASSERT_EQ(match_make_log(builtin_breakages(), log, "565.57.01").size(), 1u);
  EXPECT_EQ(match_make_log(builtin_breakages(), log, "565.57.01")[0].line, 2);
  EXPECT_TRUE(match_make_log(builtin_breakages(), log, "535.183.01").empty());  // not a listed branch
  EXPECT_EQ(match_make_log(builtin_breakages(), log).size(), 1u);               // no version: all entries
}

// The three 7.x breakages as NVIDIA's 595.45.04 met them on 7.3.4+deb13's headers (make -k of
// kernel-open; strncpy only once of_gpio.h was fixed): each line names its own entry.
TEST(Breakages, Measured595On73) {
  const std::string q = "\xE2\x80\x98", e = "\xE2\x80\x99";
  const std::vector<std::pair<std::string, std::string>> lines = {
      {"kernel-open/common/inc/nv-linux.h:1730:10: fatal error: linux/of_gpio.h: No such file or directory",
       "of-gpio-h-removed"},
      {"nvidia-modeset/nvidia-modeset-linux.c:642:12: error: implicit declaration of function " + q + "strncpy" + e +
           " [-Wimplicit-function-declaration]",
       "strncpy-removed"},
      {"nvidia-drm/nvidia-drm-drv.c:954:10: error: invalid use of undefined type " + q + "struct drm_atomic_state" + e,
       "drm-atomic-state-renamed"},
      // the rename's errors that name the new type or helper (the matrix script found them unmatched)
      {"nvidia-drm/nvidia-drm-crtc.c:2100:23: error: initialization of " + q +
           "int (*)(struct drm_plane *, struct drm_atomic_commit *)" + e + " from incompatible pointer type",
       "drm-atomic-state-renamed"},
      {"nvidia-drm/nvidia-drm-modeset.c:88:5: error: implicit declaration of function " + q + "drm_atomic_state_put" +
           e + "; did you mean " + q + "drm_atomic_commit_put" + e + "?",
       "drm-atomic-state-renamed"},
      {"awk: 1: unexpected character " + std::string(1, 39), "pahole-awk-gen-btf"},  // 39: a single quote
  };
  for (const auto& [line, id] : lines) {
    const auto m = match_make_log(builtin_breakages(), line + "\n", "595.45.04");
    ASSERT_EQ(m.size(), 1u) << line;
    EXPECT_EQ(m[0].breakage->id, id);
    EXPECT_EQ(m[0].breakage->fix_builtin.value_or(""), id);
  }
  // nvkms_strncpy or strncpy_from_user are not strncpy.
  EXPECT_TRUE(match_make_log(builtin_breakages(), "x.c:1:1: error: implicit declaration of function 'nvkms_strncpy'\n",
                             "595.45.04")
                  .empty());
}

// 570.86.16-p2p on 7.2.13 and 7.3.4: every file stops on one of the tree's own headers, not only
// the nv*.h ones (the matrix script found os-interface.h, conftest.h and cpuopsys.h unmatched).
TEST(Breakages, ExtraCflagsIgnoredNamesEveryHeaderOfTheTree) {
  for (const char* h : {"nv-firmware.h", "os-interface.h", "conftest.h", "cpuopsys.h", "nv_uvm_types.h", "nvtypes.h"}) {
    const std::string line = std::string("nvidia/nv-acpi.c:26:10: fatal error: ") + h + ": No such file or directory\n";
    const auto m = match_make_log(builtin_breakages(), line, "570.86.16");
    ASSERT_EQ(m.size(), 1u) << h;
    EXPECT_EQ(m[0].breakage->id, "extra-cflags-ignored") << h;
  }
  // a kernel header the kernel removed is another entry's
  const auto k = match_make_log(builtin_breakages(),
                                "x.h:1:10: fatal error: linux/of_gpio.h: No such file or directory\n", "595.45.04");
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].breakage->id, "of-gpio-h-removed");
}

TEST(Breakages, CleanLogMatchesNothing) {
  EXPECT_TRUE(match_make_log(builtin_breakages(), "  CC [M]  nv.o\n  LD [M]  nvidia.ko\n", "550.90.07").empty());
  EXPECT_TRUE(match_make_log(builtin_breakages(), "", "550.90.07").empty());
}

TEST(Breakages, FollowPfnSignatures) {
  const auto m =
      match_make_log(builtin_breakages(), "ERROR: modpost: \"follow_pfn\" [nvidia.ko] undefined!\n", "535.54.03");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].breakage->id, "io-memory-pfn");
}

TEST(Breakages, KernelRanges) {
  const auto* io = find_breakage(builtin_breakages(), "io-memory-pfn");
  ASSERT_NE(io, nullptr);
  EXPECT_FALSE(kernel_in_range(*io, "6.1.0-56-amd64"));
  EXPECT_FALSE(kernel_in_range(*io, "6.9.12-amd64"));
  EXPECT_TRUE(kernel_in_range(*io, "6.10.0-rc1"));
  EXPECT_TRUE(kernel_in_range(*io, "6.12.48+deb13-amd64"));
  EXPECT_TRUE(kernel_in_range(*io, "6.17.0-14-generic"));
  EXPECT_TRUE(kernel_in_range(*io, "7.0.0"));
  EXPECT_FALSE(kernel_in_range(*io, "garbage"));
}

TEST(Breakages, DkmsPatchMatchAgreesWithKernelInRange) {
  const auto* io = find_breakage(builtin_breakages(), "io-memory-pfn");
  ASSERT_NE(io, nullptr);
  const auto re = dkms_patch_match(*io);
  ASSERT_FALSE(re.empty());
  const std::regex r(re, std::regex::extended);  // DKMS tests it with bash's [[ =~ ]] (POSIX ERE)
  for (const char* k : {"6.1.0-56-amd64", "6.9.12-amd64", "6.10.0-rc1", "6.10.3", "6.11.0-1-amd64",
                        "6.12.48+deb13-amd64", "6.17.0-14-generic", "6.100.1", "5.15.0-105-generic", "7.0.0", "10.1.2",
                        "4.19.0-27-amd64", "6.2.0", "6.19.1"}) {
    EXPECT_EQ(std::regex_search(k, r), kernel_in_range(*io, k)) << k << " against " << re;
  }
  const auto* pci = find_breakage(builtin_breakages(), "pci-resize-resource-exclude-bars");
  EXPECT_EQ(dkms_patch_match(*pci), "");  // decided by the headers, not the release
}

TEST(Breakages, HeaderTestOnRealHeaderLines) {
  const auto* pci = find_breakage(builtin_breakages(), "pci-resize-resource-exclude-bars");
  ASSERT_NE(pci, nullptr);
  ASSERT_TRUE(pci->headers);
  EXPECT_EQ(pci->headers->file, "include/linux/pci.h");
  // Debian 12 6.1.0-56 (6.1.192) include/linux/pci.h, and the same lines before the change.
  EXPECT_TRUE(headers_affected(*pci,
                               "u32 pci_rebar_get_possible_sizes(struct pci_dev *pdev, int bar);\n"
                               "int __must_check pci_resize_resource(struct pci_dev *dev, int i, int size,\n"
                               "\t\t\t\t     int exclude_bars);\n"));
  EXPECT_FALSE(headers_affected(*pci,
                                "u32 pci_rebar_get_possible_sizes(struct pci_dev *pdev, int bar);\n"
                                "int __must_check pci_resize_resource(struct pci_dev *dev, int i, int size);\n"
                                "int pci_select_bars(struct pci_dev *dev, unsigned long flags);\n"));
}

TEST(Breakages, ParseErrorsNameEntryFieldAndExpectation) {
  auto e = parse_breakages("breakages:\n  - id: x\n    kernels: {min: '6.10'}\n    cause: c\n", "t.yaml");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message, "t.yaml: breakages[0] (x): field 'remediation' is missing or not a non-empty string");
  e = parse_breakages("breakages:\n  - id: x\n    signature: 'a(('\n    kernels: {min: '6.10'}\n", "t.yaml");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("t.yaml: breakages[0] (x): signature: 'a((' is not a valid ECMAScript regex"),
            std::string::npos)
      << e.error().message;
  e = parse_breakages("breakages:\n  - id: x\n    kernel: {min: '6.10'}\n", "t.yaml");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("unknown field 'kernel'"), std::string::npos) << e.error().message;
  e = parse_breakages("breakages:\n  - id: x\n    kernels: {min: six}\n    cause: c\n    remediation: r\n", "t.yaml");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message, "t.yaml: breakages[0] (x): kernels.min: 'six' is not a kernel version like 6.10");
  e = parse_breakages("breakages:\n  - id: x\n    kernels: {}\n    cause: c\n    remediation: r\n", "t.yaml");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("must say which kernels"), std::string::npos);
  e = parse_breakages("nothing: here\n", "t.yaml");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message, "t.yaml: expected a top-level 'breakages:' list");
  const auto ok =
      parse_breakages("breakages:\n  - id: a\n    kernels: {max: '5.4'}\n    cause: c\n    remediation: r\n", "t.yaml");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_TRUE(kernel_in_range(ok->at(0), "5.4.0-150-generic"));
  EXPECT_FALSE(kernel_in_range(ok->at(0), "5.10.0"));
  EXPECT_FALSE(ok->at(0).signature);
}

}  // namespace
}  // namespace p2pnode::nvidia

namespace p2pnode::nvidia {
namespace {

// The predicted build and run-time breakages (display-only ones are notes: ScreenInfoIsADisplayNote).
std::vector<std::string> ids(const std::vector<PredictedBreakage>& v, bool fixed) {
  std::vector<std::string> out;
  for (const auto& p : v) {
    if (p.fixed == fixed && p.breakage->stage != BreakageStage::display) { out.push_back(p.breakage->id); }
  }
  return out;
}

// Before any build: which breakages the table says a build of each P2P tree will hit. The header
// test's value is what the probe found in the kernel's include/linux/pci.h (Debian 13's
// 6.12.117+deb13 and Debian 12's 6.1.0-56 both declare exclude_bars).
TEST(Forecast, EachTreeOnDebian13sKernel) {
  const auto& t = builtin_breakages();
  const std::map<std::string, bool> pci_has_arg{{"pci-resize-resource-exclude-bars", true}};
  const std::string k612 = "6.12.117+deb13-amd64";
  // Measured on those headers: 550 breaks twice, 565 and 570 once (trees/README.md).
  auto p = predict_breakages(t, "550.90.07", k612, pci_has_arg, {});
  EXPECT_EQ(ids(p, false),
            (std::vector<std::string>{"pci-resize-resource-exclude-bars", "io-memory-pfn", "drm-output-poll-changed"}));
  p = predict_breakages(t, "565.57.01", k612, pci_has_arg, {});
  EXPECT_EQ(ids(p, false), (std::vector<std::string>{"pci-resize-resource-exclude-bars", "io-memory-pfn"}));
  p = predict_breakages(t, "570.86.16", k612, pci_has_arg, {"pci-resize-resource-exclude-bars"});
  EXPECT_EQ(ids(p, true), (std::vector<std::string>{"pci-resize-resource-exclude-bars"}));
  EXPECT_EQ(ids(p, false), (std::vector<std::string>{"io-memory-pfn"}));
  // io-memory-pfn builds and fails at run time: predicted, but not as a build stop.
  EXPECT_EQ(find_breakage(t, "io-memory-pfn")->stage, BreakageStage::runtime);
  EXPECT_EQ(find_breakage(t, "drm-output-poll-changed")->stage, BreakageStage::build);
  const auto d = p[0].describe("570.86.16", k612);
  EXPECT_NE(d.find("known breakage pci-resize-resource-exclude-bars will stop the build of 570.86.16 on " + k612),
            std::string::npos)
      << d;
  // A branch past every fix (595, aikitoria's later tree): nothing, io-memory-pfn included (NVIDIA
  // uses follow_pfnmap_start() from 575 on).
  EXPECT_TRUE(ids(predict_breakages(t, "595.58.03", k612, pci_has_arg, {}), false).empty());
}

TEST(Forecast, Debian12sKernelAndHeadersThatSayNothing) {
  const auto& t = builtin_breakages();
  // 6.1: no drm breakage (6.12 and later), no io-memory-pfn (6.10 and later).
  auto p = predict_breakages(t, "550.90.07", "6.1.0-56-amd64", {{"pci-resize-resource-exclude-bars", true}}, {});
  EXPECT_EQ(ids(p, false), (std::vector<std::string>{"pci-resize-resource-exclude-bars"}));
  // Older 6.1 headers without the argument, or headers the probe could not read: not predicted.
  EXPECT_TRUE(
      predict_breakages(t, "550.90.07", "6.1.0-20-amd64", {{"pci-resize-resource-exclude-bars", false}}, {}).empty());
  EXPECT_TRUE(predict_breakages(t, "550.90.07", "6.1.0-56-amd64", {}, {}).empty());
}

// The trees' own lines (shared/trees): the P2P trees call pci_resize_resource with three
// arguments; 565 and 570 carry NVIDIA's conftest for output_poll_changed, 550 does not; a tree the
// table does not know (no nv-pci.c) is not affected.
TEST(Forecast, TheTreesOwnSourceDecidesWhereItWasRead) {
  const auto& t = builtin_breakages();
  const auto* pci = find_breakage(t, "pci-resize-resource-exclude-bars");
  const auto* drm = find_breakage(t, "drm-output-poll-changed");
  EXPECT_TRUE(
      source_affected(*pci, std::string_view("    r = pci_resize_resource(pci_dev, NV_GPU_BAR1, requested_size);\n")));
  EXPECT_FALSE(source_affected(
      *pci, std::string_view("#if defined(NV_PCI_RESIZE_RESOURCE_HAS_EXCLUDE_BARS_ARG)\n"
                             "    r = pci_resize_resource(pci_dev, NV_GPU_BAR1, requested_size, 0);\n")));
  EXPECT_FALSE(source_affected(*pci, std::nullopt));
  EXPECT_TRUE(source_affected(*drm, std::string_view("    .output_poll_changed = nv_drm_output_poll_changed,\n")));
  EXPECT_FALSE(source_affected(*drm, std::string_view("    #if defined(NV_DRM_OUTPUT_POLL_CHANGED_PRESENT)\n"
                                                      "    .output_poll_changed = nv_drm_output_poll_changed,\n")));
  // In the forecast: a staged 550 tree without nv-pci.c (a test tree) forecasts nothing on 6.1.
  const std::map<std::string, bool> hdr{{"pci-resize-resource-exclude-bars", true}};
  const std::map<std::string, bool> src{
      {"pci-resize-resource-exclude-bars", false}, {"drm-output-poll-changed", false}, {"io-memory-pfn", false}};
  EXPECT_TRUE(predict_breakages(t, "550.90.07", "6.12.117+deb13-amd64", hdr, {}, &src).empty());
  EXPECT_EQ(predict_breakages(t, "550.90.07", "6.12.117+deb13-amd64", hdr, {}).size(), 3u);  // by the version alone
}

// The header tests of the 6.13 … 7.3 entries on the lines recorded from Debian's real header
// packages (tests/fixtures/kernel-headers, README.md there): nothing on 6.12.117 but the
// pci_resize_resource argument; every one of them on 7.2.13 and 7.3.4.
std::map<std::string, bool> probe_recorded(const std::string& k) {
  const fs::path dir = fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures/kernel-headers/lib/modules" / k;
  std::map<std::string, bool> out;
  for (const auto& b : builtin_breakages()) {
    if (!b.headers) { continue; }
    std::vector<std::optional<std::string>> copies;
    bool folder = false;
    for (const char* side : {"build", "source"}) {
      const fs::path f = dir / side / b.headers->file;
      copies.push_back(fs::is_regular_file(f) ? std::optional<std::string>(read(f)) : std::nullopt);
      folder = folder || fs::is_regular_file(dir / side / "include/linux/module.h");
    }
    if (const auto v = headers_affected(b, copies, folder)) { out[b.id] = *v; }
  }
  return out;
}

TEST(Breakages, HeaderTestsOnRecordedDebianHeaders) {
  const auto k612 = probe_recorded("6.12.117+deb13-amd64");
  const auto k72 = probe_recorded("7.2.13+deb14-amd64");
  const auto k73 = probe_recorded("7.3.4+deb13-amd64");
  const std::vector<std::string> new_ones = {
      "extra-cflags-ignored",   "kbuild-extmod-cwd",       "module-import-ns-string", "drm-driver-date",
      "del-timer-sync-removed", "hrtimer-init-removed",    "drm-mode-valid-const",    "drm-fb-create-format-info",
      "pfn-t-removed",          "get-dev-pagemap-one-arg", "of-gpio-h-removed",       "drm-atomic-state-renamed"};
  for (const auto& id : new_ones) {
    ASSERT_TRUE(k612.count(id) && k72.count(id) && k73.count(id))
        << id << ": a header test the recorded headers cannot judge";
    EXPECT_FALSE(k612.at(id)) << id << " on 6.12.117";
    EXPECT_TRUE(k72.at(id)) << id << " on 7.2.13";
    EXPECT_TRUE(k73.at(id)) << id << " on 7.3.4";
  }
  EXPECT_TRUE(k612.at("pci-resize-resource-exclude-bars"));
  EXPECT_TRUE(k73.at("pci-resize-resource-exclude-bars"));
}

TEST(Breakages, HeaderTestKinds) {
  const auto t = parse_breakages(
      "breakages:\n"
      "  - {id: gone, kernels: {headers: {file: include/linux/x.h, absent: true}}, cause: c, remediation: r}\n"
      "  - {id: lacks, kernels: {headers: {file: f, lacks: \"EXTRA\"}}, cause: c, remediation: r}\n",
      "t.yaml");
  ASSERT_TRUE(t) << t.error().message;
  const auto& gone = (*t)[0];
  const auto& lacks = (*t)[1];
  EXPECT_EQ(headers_affected(gone, {std::nullopt, std::nullopt}, true), std::optional<bool>(true));
  EXPECT_EQ(headers_affected(gone, {std::nullopt, std::string("x")}, true), std::optional<bool>(false));
  EXPECT_EQ(headers_affected(gone, {std::nullopt, std::nullopt}, false), std::nullopt);  // no headers to judge
  EXPECT_EQ(headers_affected(lacks, {std::string("ccflags-y += $(EXTRA_CFLAGS)"), std::nullopt}, true),
            std::optional<bool>(false));
  EXPECT_EQ(headers_affected(lacks, {std::string(""), std::string("")}, true), std::optional<bool>(true));
  EXPECT_EQ(headers_affected(lacks, {std::nullopt, std::nullopt}, true), std::nullopt);
  const auto two = parse_breakages(
      "breakages:\n  - {id: x, kernels: {headers: {file: f, lacks: a, pattern: b}}, cause: c, remediation: r}\n",
      "t.yaml");
  ASSERT_FALSE(two);
  EXPECT_EQ(two.error().message,
            "t.yaml: breakages[0] (x): kernels.headers: expected exactly one of pattern, lacks, absent");
  const auto fix = parse_breakages(
      "breakages:\n  - {id: x, kernels: {min: \"6.1\"}, cause: c, remediation: r, fix: {}}\n", "t.yaml");
  ASSERT_FALSE(fix);
  EXPECT_EQ(
      fix.error().message,
      "t.yaml: breakages[0] (x): 'fix' must be {builtin: <patch name>} or {none: <why there is no builtin patch>}");
}

// fixed_in, read from NVIDIA's tags: the first release of each branch that carries the fix.
TEST(Breakages, FixedInReleasesAndTheFirstReleasePastThem) {
  const auto& t = builtin_breakages();
  const auto* extra = find_breakage(t, "extra-cflags-ignored");
  ASSERT_NE(extra, nullptr);
  EXPECT_TRUE(release_affected(*extra, "550.90.07"));
  EXPECT_TRUE(release_affected(*extra, "550.163.01"));  // the 550 branch never left EXTRA_CFLAGS
  EXPECT_TRUE(release_affected(*extra, "565.57.01"));   // a branch between the named ones
  EXPECT_TRUE(release_affected(*extra, "570.148.08"));
  EXPECT_FALSE(release_affected(*extra, "570.153.02"));
  EXPECT_TRUE(release_affected(*extra, "575.51.02"));
  EXPECT_FALSE(release_affected(*extra, "575.64.05"));
  EXPECT_FALSE(release_affected(*extra, "580.105.08"));
  EXPECT_FALSE(release_affected(*extra, "610.43.03"));  // newer than every named branch
  const auto* fb = find_breakage(t, "drm-fb-create-format-info");
  EXPECT_TRUE(release_affected(*fb, "575.64.05"));  // never fixed in 575
  EXPECT_FALSE(release_affected(*fb, "570.190"));
  // A kernel with 6.15's breakages: 570.153.02 is the first release past them all.
  std::vector<const Breakage*> k615;
  for (const char* id : {"extra-cflags-ignored", "kbuild-extmod-cwd", "module-import-ns-string", "drm-driver-date",
                         "del-timer-sync-removed", "hrtimer-init-removed", "drm-mode-valid-const"}) {
    k615.push_back(find_breakage(t, id));
  }
  EXPECT_EQ(first_release_past(k615), std::optional<std::string>("570.153.02"));
  // With 6.17's fb_create too: 570.190.
  k615.push_back(fb);
  EXPECT_EQ(first_release_past(k615), std::optional<std::string>("570.190"));
  // 7.2: struct drm_atomic_state is gone; 580.178.04 is the first release reported to cope.
  k615.push_back(find_breakage(t, "drm-atomic-state-renamed"));
  EXPECT_EQ(first_release_past(k615), std::optional<std::string>("580.178.04"));
  // With 7.0's BTF step (no release is known to fix it): none.
  k615.push_back(find_breakage(t, "pahole-awk-gen-btf"));
  EXPECT_EQ(first_release_past(k615), std::nullopt);
}

// The 6.13 … 7.3 entries on the recorded 7.3.4 headers, for each P2P tree: EXTRA_CFLAGS first.
TEST(Forecast, EachTreeOnTrixieBackports73) {
  const auto& t = builtin_breakages();
  const std::string k = "7.3.4+deb13-amd64";
  const auto hdr = probe_recorded(k);
  auto p = predict_breakages(t, "550.90.07", k, hdr, {});
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.front().breakage->id, "extra-cflags-ignored");
  EXPECT_EQ(ids(p, false),
            (std::vector<std::string>{"extra-cflags-ignored", "kbuild-extmod-cwd", "module-import-ns-string",
                                      "drm-driver-date", "del-timer-sync-removed", "hrtimer-init-removed",
                                      "drm-mode-valid-const", "drm-fb-create-format-info",
                                      "dev-pagemap-page-free-renamed", "strncpy-removed", "drm-atomic-state-renamed",
                                      "pci-resize-resource-exclude-bars", "io-memory-pfn", "drm-output-poll-changed"}));
  // NVIDIA's 595.45.04: the four measured failures (strncpy behind of_gpio.h, the BTF step at the
  // link) and nothing else.
  const std::vector<std::string> k7{"of-gpio-h-removed", "strncpy-removed", "drm-atomic-state-renamed"};
  EXPECT_EQ(ids(predict_breakages(t, "595.45.04", k, hdr, {}), false),
            (std::vector<std::string>{"of-gpio-h-removed", "strncpy-removed", "drm-atomic-state-renamed",
                                      "pahole-awk-gen-btf"}));
  // With the three builtin patches every compile stop is fixed (the patched tree compiled on 7.3.4);
  // the BTF step at the link still stops it until its own builtin is named too.
  p = predict_breakages(t, "595.45.04", k, hdr, k7);
  EXPECT_EQ(ids(p, true), k7);
  for (const auto& b : p) {
    EXPECT_TRUE(b.fixed == (b.breakage->id != "pahole-awk-gen-btf") || b.breakage->stage != BreakageStage::build)
        << b.breakage->id;
  }
  auto k7_all = k7;
  k7_all.push_back("pahole-awk-gen-btf");
  p = predict_breakages(t, "595.45.04", k, hdr, k7_all);
  EXPECT_EQ(ids(p, true), k7_all);
  for (const auto& b : p) { EXPECT_TRUE(b.fixed || b.breakage->stage != BreakageStage::build) << b.breakage->id; }
  // 550's EXTRA_CFLAGS has no builtin: the same patches leave it stopped.
  p = predict_breakages(t, "550.90.07", k, hdr, k7);
  EXPECT_EQ(p.front().breakage->id, "extra-cflags-ignored");
  EXPECT_FALSE(p.front().fixed);
  // aikitoria's 575.64.05-p2p: fb_create, pfn_t, strncpy and drm_atomic_state; its Makefile has the
  // awk PAHOLE program (from 575.51.02 on).
  EXPECT_EQ(ids(predict_breakages(t, "575.64.05", k, hdr, {}), false),
            (std::vector<std::string>{"drm-fb-create-format-info", "pfn-t-removed", "dev-pagemap-page-free-renamed",
                                      "strncpy-removed", "drm-atomic-state-renamed", "pahole-awk-gen-btf",
                                      "pci-resize-resource-exclude-bars"}));
  // 580.142 and 590.48.01 (the matrix built both with the P2P port): 580.142 has NVIDIA's folio_free
  // conftest and stops where 595 does; 590.48.01 has not (7 errors in uvm_pmm_gpu.c with the builtins).
  EXPECT_EQ(ids(predict_breakages(t, "580.142", k, hdr, {}), false),
            (std::vector<std::string>{"of-gpio-h-removed", "strncpy-removed", "drm-atomic-state-renamed",
                                      "pahole-awk-gen-btf"}));
  p = predict_breakages(t, "590.48.01", k, hdr, k7);
  // With the three 7.x builtins only the new stop (no builtin) and the link's are left.
  EXPECT_EQ(ids(p, false), (std::vector<std::string>{"dev-pagemap-page-free-renamed", "pahole-awk-gen-btf"}));
  EXPECT_EQ(p.front().breakage->id, "dev-pagemap-page-free-renamed");
  EXPECT_FALSE(p.front().fixed);
  // 6.12.117's memremap.h still has page_free.
  for (const auto& b :
       predict_breakages(t, "590.48.01", "6.12.117+deb13-amd64", probe_recorded("6.12.117+deb13-amd64"), {})) {
    EXPECT_NE(b.breakage->id, "dev-pagemap-page-free-renamed");
  }
  // 6.12.117 has none of the three (of_gpio.h, strncpy() and struct drm_atomic_state are there).
  const auto h612 = probe_recorded("6.12.117+deb13-amd64");
  for (const auto& b : predict_breakages(t, "595.45.04", "6.12.117+deb13-amd64", h612, {})) {
    EXPECT_EQ(std::count(k7.begin(), k7.end(), b.breakage->id), 0) << b.breakage->id;
  }
}

TEST(Forecast, StageFieldIsCheckedWhenTheTableIsParsed) {
  const auto bad = parse_breakages(
      "breakages:\n  - id: x\n    stage: sometimes\n    kernels: {min: \"6.1\"}\n    cause: c\n    remediation: r\n",
      "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "t.yaml: breakages[0] (x): 'stage' must be build, runtime or display, found 'sometimes'");
}

}  // namespace
}  // namespace p2pnode::nvidia
