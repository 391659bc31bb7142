// driver.kernels on a fixture root with two kernels in /lib/modules: the module is installed for
// one, its build failed (the recorded real make.log) for the other, the next boot kernel. Then the
// missing build appears (as `apply` would leave it) and the check passes; the metric follows.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "checks/check.hpp"
#include "dkms/kernel_compiler.hpp"
#include "engine/metrics.hpp"
#include "nvidia/forecast.hpp"
#include "probe/probe.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::checks {
namespace {
namespace fs = std::filesystem;

struct KernelsRoot {
  p2pnode::test::TempDir tmp{"kernels"};
  fs::path dir = tmp.path();
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << text;
  }
  // One kernel's headers as recorded from Debian's real packages (tests/fixtures/kernel-headers).
  void headers(const std::string& k) const {
    const fs::path from = fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures/kernel-headers/lib/modules" / k;
    fs::create_directories(dir / "lib/modules" / k);
    fs::copy(from, dir / "lib/modules" / k, fs::copy_options::recursive);
    fs::create_directories(dir / "lib/modules" / k / "source/include/linux");  // git keeps no empty folder
  }
  void install(const std::string& k) const {  // what `dkms build` + `dkms install` leave
    for (const char* m : {"nvidia.ko", "nvidia-uvm.ko"}) {
      write("var/lib/dkms/nvidia-p2p/550.90.07/" + k + "/x86_64/module/" + m, "ko");
      write("lib/modules/" + k + "/updates/dkms/" + m, "ko");
    }
  }
};

Profile profile() {
  Profile p;
  DriverSpec d;
  d.version = "550.90.07";
  d.kernel_module = ModuleSource{};
  d.kernel_module->name = "nvidia-p2p";
  p.driver = d;
  return p;
}

const Finding* for_kernel(const std::vector<Finding>& fs, const std::string& k) {
  for (const auto& f : fs) {
    if (f.subject == k) { return &f; }
  }
  return nullptr;
}

TEST(DriverKernels, TwoKernelsOneBuildFailedThenApplied) {
  KernelsRoot r;
  for (const char* k : {"6.1.0-55-amd64", "6.1.0-56-amd64"}) {
    fs::create_directories(r.dir / "lib/modules" / k / "kernel");
    fs::create_directories(r.dir / "lib/modules" / k / "build");
    r.write(std::string("boot/vmlinuz-") + k, "");
  }
  r.write("proc/sys/kernel/osrelease", "6.1.0-55-amd64\n");
  r.install("6.1.0-55-amd64");
  std::ifstream real(fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures/make-logs/550.90.07-p2p-6.1.0-56-amd64.make.log");
  const std::string log((std::istreambuf_iterator<char>(real)), std::istreambuf_iterator<char>());
  r.write("var/lib/p2pnode/dkms/failed/nvidia-p2p/550.90.07/6.1.0-56-amd64/make.log", log);
  const sys::SysRoot root(r.dir);

  Inventory inv = probe::probe_inventory(root);
  ASSERT_EQ(inv.kernels.kernels.size(), 2u);
  EXPECT_EQ(inv.kernels.next_boot, "6.1.0-56-amd64");
  auto f = check_driver_kernels(profile(), inv);
  ASSERT_EQ(f.size(), 2u);
  const auto* ok = for_kernel(f, "6.1.0-55-amd64");
  const auto* bad = for_kernel(f, "6.1.0-56-amd64");
  ASSERT_TRUE(ok && bad);
  EXPECT_EQ(ok->severity, Severity::ok);
  EXPECT_EQ(ok->summary, "nvidia-p2p/550.90.07 is built and installed by DKMS for 6.1.0-55-amd64 (running)");
  EXPECT_EQ(bad->severity, Severity::error);
  EXPECT_NE(bad->summary.find("nvidia-p2p/550.90.07 is not installed for 6.1.0-56-amd64 (next boot): its DKMS build "
                              "failed: "),
            std::string::npos)
      << bad->summary;
  EXPECT_NE(bad->summary.find("nv-pci.c:234:9: error: too few arguments to function"), std::string::npos)
      << bad->summary;
  EXPECT_NE(bad->summary.find("a reboot now would come up without P2P"), std::string::npos);
  EXPECT_NE(bad->remediation.find("known breakage pci-resize-resource-exclude-bars"), std::string::npos)
      << bad->remediation;
  EXPECT_NE(bad->remediation.find("{builtin: pci-resize-resource-exclude-bars}"), std::string::npos);
  EXPECT_EQ(bad->observed["next_boot_how"], "the newest /boot/vmlinuz-* (6.1.0-56-amd64)");

  engine::RecordedState s;
  for (const auto& x : f) { s.findings.push_back(to_json(x)); }
  auto m = engine::render_metrics(s, engine::Runtime{});
  EXPECT_NE(m.find("p2pnode_kernel_module_installed{kernel=\"6.1.0-56-amd64\",next_boot=\"true\",running=\"false\","
                   "version=\"550.90.07\"} 0"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("p2pnode_kernel_module_installed{kernel=\"6.1.0-55-amd64\",next_boot=\"false\",running=\"true\","
                   "version=\"550.90.07\"} 1"),
            std::string::npos);

  // After `apply` (with the builtin patch) built 6.1.0-56 and dropped the failed log.
  r.install("6.1.0-56-amd64");
  fs::remove_all(r.dir / "var/lib/p2pnode/dkms/failed/nvidia-p2p/550.90.07/6.1.0-56-amd64");
  inv = probe::probe_inventory(root);
  f = check_driver_kernels(profile(), inv);
  ASSERT_EQ(f.size(), 2u);
  for (const auto& x : f) { EXPECT_EQ(x.severity, Severity::ok) << x.subject << ": " << x.summary; }
  s.findings = nlohmann::json::array();
  for (const auto& x : f) { s.findings.push_back(to_json(x)); }
  m = engine::render_metrics(s, engine::Runtime{});
  EXPECT_NE(m.find("p2pnode_kernel_module_installed{kernel=\"6.1.0-56-amd64\",next_boot=\"true\",running=\"false\","
                   "version=\"550.90.07\"} 1"),
            std::string::npos);
}

TEST(DriverKernels, NoHeadersAndNeverBuiltSayWhatToDo) {
  KernelsRoot r;
  fs::create_directories(r.dir / "lib/modules/6.1.0-56-amd64/kernel");  // no build/
  fs::create_directories(r.dir / "lib/modules/6.1.0-57-amd64/build");
  fs::create_directories(r.dir / "lib/modules/6.1.0-57-amd64/kernel");
  const sys::SysRoot root(r.dir);
  const Inventory inv = probe::probe_inventory(root);
  const auto f = check_driver_kernels(profile(), inv);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(for_kernel(f, "6.1.0-56-amd64")->remediation,
            "Install linux-headers-6.1.0-56-amd64, then `p2pnode apply` (it builds for every kernel with headers).");
  EXPECT_EQ(for_kernel(f, "6.1.0-57-amd64")->summary,
            "nvidia-p2p/550.90.07 is not built for 6.1.0-57-amd64 (next boot); a reboot now would come up without P2P");
  // No kernel_module in the profile: nothing to say.
  Profile none;
  EXPECT_TRUE(check_driver_kernels(none, inv).empty());
}

// A Debian 13 node that took trixie-backports' 7.3.4 (its headers as recorded from the real
// packages) beside 6.12.117: the 550.90.07-p2p profile is an error on 7.3.4 before any build, naming
// EXTRA_CFLAGS first and every other breakage the headers show; on 6.12.117 only the one the
// builtin patch fixes. apply's forecast (build_stops) says the same.
TEST(DriverKernels, TrixieBackports73IsRefusedBeforeAnyBuildNamingExtraCflagsFirst) {
  KernelsRoot r;
  const std::string k73 = "7.3.4+deb13-amd64", k612 = "6.12.117+deb13-amd64";
  r.headers(k73);
  r.headers(k612);
  r.write("proc/sys/kernel/osrelease", k612 + "\n");
  r.write("usr/bin/x86_64-linux-gnu-gcc-14", "");  // both headers name it (CONFIG_CC_VERSION_TEXT)
  const sys::SysRoot root(r.dir);
  const Inventory inv = probe::probe_inventory(root);
  ASSERT_EQ(inv.kernels.kernels.size(), 2u);
  EXPECT_EQ(inv.kernels.next_boot, k73);
  const auto f = check_driver_kernels(profile(), inv);
  const Finding* on73 = for_kernel(f, k73);
  ASSERT_NE(on73, nullptr);
  EXPECT_EQ(on73->severity, Severity::error);
  EXPECT_EQ(on73->summary.rfind("nvidia-p2p/550.90.07 will not build for " + k73 +
                                    " (next boot): known breakage "
                                    "extra-cflags-ignored will stop the build of 550.90.07 on " +
                                    k73 + ": Kbuild stopped reading EXTRA_CFLAGS in 6.15",
                                0),
            0u)
      << on73->summary;
  EXPECT_EQ(
      on73->observed["build_stops"],
      (nlohmann::json{"extra-cflags-ignored", "kbuild-extmod-cwd", "module-import-ns-string", "drm-driver-date",
                      "del-timer-sync-removed", "hrtimer-init-removed", "drm-mode-valid-const",
                      "drm-fb-create-format-info", "dev-pagemap-page-free-renamed", "strncpy-removed",
                      "drm-atomic-state-renamed", "pci-resize-resource-exclude-bars", "drm-output-poll-changed"}));
  EXPECT_NE(on73->remediation.find("No NVIDIA release is known to build on " + k73 + " as released: no release is " +
                                   "recorded as fixing pahole-awk-gen-btf (known up to 595.45.04). 595.45.04 with the "
                                   "builtin patches of-gpio-h-removed, strncpy-removed, drm-atomic-state-renamed, "
                                   "pahole-awk-gen-btf builds there"),
            std::string::npos)
      << on73->remediation;
  EXPECT_FALSE(on73->observed.contains("first_release_that_builds"));
  // 6.12.117: the exclude_bars argument (and the 550 branch's output_poll_changed), both builtin-fixable.
  const Finding* on612 = for_kernel(f, k612);
  ASSERT_NE(on612, nullptr);
  EXPECT_EQ(on612->observed["build_stops"],
            (nlohmann::json{"pci-resize-resource-exclude-bars", "drm-output-poll-changed"}));
  EXPECT_EQ(on612->observed["first_release_that_builds"], "580.126.09");
  const auto stops = nvidia::build_stops(inv, *profile().driver);
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[0].rfind(k73 + ": known breakage extra-cflags-ignored will stop the build of 550.90.07", 0), 0u)
      << stops[0];
  EXPECT_NE(
      stops[0].find(". No NVIDIA release is known to build on " + k73 +
                    " as released: no release is recorded as "
                    "fixing pahole-awk-gen-btf (known up to 595.45.04). 595.45.04 with the builtin patches "
                    "of-gpio-h-removed, strncpy-removed, drm-atomic-state-renamed, pahole-awk-gen-btf builds there"),
      std::string::npos)
      << stops[0];

  // The same box with aikitoria's 575.64.05-p2p: 7.3.4 still stops it (fb_create, pfn_t, strncpy,
  // drm_atomic_state, and at the link the awk PAHOLE program).
  Profile p = profile();
  p.driver->version = "575.64.05";
  const auto f575 = check_driver_kernels(p, inv);
  on73 = for_kernel(f575, k73);
  ASSERT_NE(on73, nullptr);
  EXPECT_EQ(on73->severity, Severity::error) << on73->summary;
  EXPECT_EQ(
      on73->observed["build_stops"],
      (nlohmann::json{"drm-fb-create-format-info", "pfn-t-removed", "dev-pagemap-page-free-renamed", "strncpy-removed",
                      "drm-atomic-state-renamed", "pahole-awk-gen-btf", "pci-resize-resource-exclude-bars"}));
}

// Modules that shadow the patched build: the .run installer's nvidia.ko in updates/dkms (not from
// DKMS) competes with the DKMS build; once the DKMS build is installed and modules.dep still resolves
// nvidia to a copy DKMS did not install, that copy loads instead. A copy in kernel/drivers/video that
// the DKMS build outranks is left alone.
TEST(DriverKernels, ModulesThatShadowTheDkmsBuildAreFound) {
  KernelsRoot r;
  const std::string k = "6.12.117+deb13-amd64";
  fs::create_directories(r.dir / "lib/modules" / k / "kernel");
  fs::create_directories(r.dir / "lib/modules" / k / "build");
  r.write("lib/modules/" + k + "/updates/dkms/nvidia.ko.xz", "run");  // the .run installer's, no DKMS record
  r.write("lib/modules/" + k + "/kernel/drivers/video/nvidia-uvm.ko", "run");
  r.write("lib/modules/" + k + "/modules.dep",
          "kernel/drivers/video/nvidia-uvm.ko: updates/dkms/nvidia.ko.xz\n"
          "updates/dkms/nvidia.ko.xz:\n");
  const sys::SysRoot root(r.dir);
  Inventory inv = probe::probe_inventory(root);
  ASSERT_EQ(inv.kernels.kernels.size(), 1u);
  const auto& ik = inv.kernels.kernels[0];
  EXPECT_EQ(ik.foreign_nvidia, (std::vector<std::string>{"/lib/modules/" + k + "/updates/dkms/nvidia.ko.xz"}));
  EXPECT_EQ(ik.modprobe_nvidia, "/lib/modules/" + k + "/updates/dkms/nvidia.ko.xz");
  auto f = check_driver_kernels(profile(), inv);
  const Finding* w = nullptr;
  for (const auto& x : f) {
    if (x.observed.contains("from_dkms")) { w = &x; }
  }
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->severity, Severity::warning);
  EXPECT_EQ(
      w->summary,
      "/lib/modules/" + k + "/updates/dkms/nvidia.ko.xz on " + k +
          " was not installed by DKMS (the .run "
          "installer's copy) and lies in updates/, where DKMS installs nvidia-p2p/550.90.07 and modprobe looks first");
  EXPECT_EQ(w->remediation, "Run `p2pnode apply`: before DKMS builds nvidia-p2p/550.90.07 it moves /lib/modules/" + k +
                                "/updates/dkms/nvidia.ko.xz to /var/lib/p2pnode/shadowed/" + k +
                                "/ (a backup, never deleted), and DKMS's install runs depmod.");

  // The DKMS build installed beside a .run copy in kernel/drivers/video that modules.dep still names
  // (depmod not rerun): an error; the same copy outranked by the DKMS build: nothing.
  fs::remove_all(r.dir / "lib/modules" / k / "updates");
  for (const char* m : {"nvidia.ko", "nvidia-uvm.ko"}) {
    r.write("var/lib/dkms/nvidia-p2p/550.90.07/" + k + "/x86_64/module/" + m, "ko");
    r.write("lib/modules/" + k + "/updates/dkms/" + m, "ko");
  }
  r.write("lib/modules/" + k + "/kernel/drivers/video/nvidia.ko", "run");
  r.write("lib/modules/" + k + "/modules.dep", "kernel/drivers/video/nvidia.ko:\n");
  inv = probe::probe_inventory(root);
  EXPECT_EQ(inv.kernels.kernels[0].foreign_nvidia,
            (std::vector<std::string>{"/lib/modules/" + k + "/kernel/drivers/video/nvidia.ko"}));
  f = check_driver_kernels(profile(), inv);
  w = nullptr;
  for (const auto& x : f) {
    if (x.observed.contains("from_dkms")) { w = &x; }
  }
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->severity, Severity::error);
  EXPECT_EQ(w->summary.rfind("modprobe resolves nvidia on " + k + " to /lib/modules/" + k +
                                 "/kernel/drivers/video/nvidia.ko, "
                                 "which DKMS did not install",
                             0),
            0u)
      << w->summary;
  r.write("lib/modules/" + k + "/modules.dep", "updates/dkms/nvidia.ko:\n");
  inv = probe::probe_inventory(root);
  for (const auto& x : check_driver_kernels(profile(), inv)) {
    EXPECT_FALSE(x.observed.contains("from_dkms")) << x.summary;
  }
}

// The compiler the kernel wants: 7.3.4+deb13's headers were made with gcc-14 (the recorded
// auto.conf), sid's 7.2.13 with gcc-16; a box without it is told before any build which package
// to install. Both files the headers carry decode the same.
TEST(DriverKernels, TheCompilerTheHeadersNameMustBeInstalled) {
  const auto conf = dkms::decode_kernel_compiler(
      "CONFIG_GCC_VERSION=140200\nCONFIG_CC_VERSION_TEXT=x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0\n");
  ASSERT_TRUE(conf);
  EXPECT_EQ(conf->command, "x86_64-linux-gnu-gcc-14");
  EXPECT_EQ(conf->short_name, "gcc-14");
  EXPECT_EQ(conf->package, "gcc-14");
  const auto h = dkms::decode_kernel_compiler(
      "#define CONFIG_CC_VERSION_TEXT \"x86_64-linux-gnu-gcc-14 (Ubuntu 14.2.0-4ubuntu2~24.04) 14.2.0\"\n");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->text, "x86_64-linux-gnu-gcc-14 (Ubuntu 14.2.0-4ubuntu2~24.04) 14.2.0");
  EXPECT_EQ(h->package, "gcc-14");
  EXPECT_EQ(dkms::decode_kernel_compiler("CONFIG_CC_IS_GCC=y\n"), std::nullopt);

  KernelsRoot r;
  const std::string k73 = "7.3.4+deb13-amd64", k72 = "7.2.13+deb14-amd64";
  r.headers(k73);
  r.headers(k72);
  r.write("usr/bin/x86_64-linux-gnu-gcc-14", "");  // gcc-14 installed, gcc-16 not
  const sys::SysRoot root(r.dir);
  const Inventory inv = probe::probe_inventory(root);
  Profile p = profile();
  p.driver->version = "595.45.04";
  const auto f = check_driver_kernels(p, inv);
  const Finding* cc = nullptr;
  for (const auto& x : f) {
    if (x.subject == k72 && x.observed.contains("compiler")) { cc = &x; }
  }
  ASSERT_NE(cc, nullptr);
  EXPECT_EQ(cc->severity, Severity::error);
  EXPECT_EQ(cc->summary,
            "DKMS cannot build nvidia-p2p/595.45.04 for " + k72 +
                ": its headers were made with "
                "x86_64-linux-gnu-gcc-16 (Debian 16.2.0-4) 16.2.0, and x86_64-linux-gnu-gcc-16 is not installed");
  EXPECT_EQ(
      cc->remediation,
      "Before any build: apt-get install gcc-16 (it brings /usr/bin/x86_64-linux-gnu-gcc-16), then `p2pnode apply`.");
  for (const auto& x : f) { EXPECT_FALSE(x.subject == k73 && x.observed.contains("compiler")) << x.summary; }
  int compiler_stops = 0;
  for (const auto& s : nvidia::build_stops(inv, *p.driver)) {
    if (s.find("x86_64-linux-gnu-gcc-16 is not installed (apt-get install gcc-16)") != std::string::npos) {
      ++compiler_stops;
    }
  }
  EXPECT_EQ(compiler_stops, 1);
}

// Before any build: a Debian 13 kernel whose include/linux/pci.h (the real line of
// 6.12.117+deb13's, in the -common package that /lib/modules/<k>/source points to) has
// exclude_bars. The 570 tree (aikitoria's 4090 tree) without the builtin patch is named as a build that will
// stop, and apply's plan refuses it; with the patch in the profile the kernel just waits for apply.
TEST(DriverKernels, ABreakageIsForecastBeforeAnyBuild) {
  KernelsRoot r;
  const std::string k = "6.12.117+deb13-amd64";
  fs::create_directories(r.dir / "lib/modules" / k / "kernel");
  fs::create_directories(r.dir / "lib/modules" / k / "build");
  r.write("lib/modules/" + k + "/source/include/linux/pci.h",
          "u32 pci_rebar_get_possible_sizes(struct pci_dev *pdev, int bar);\n"
          "int __must_check pci_resize_resource(struct pci_dev *dev, int i, int size,\n"
          "\t\t\t\t     int exclude_bars);\n");
  r.write("proc/sys/kernel/osrelease", k + "\n");
  const sys::SysRoot root(r.dir);
  const Inventory inv = probe::probe_inventory(root);
  ASSERT_EQ(inv.kernels.kernels.size(), 1u);
  EXPECT_EQ(inv.kernels.kernels[0].header_tests.at("pci-resize-resource-exclude-bars"), true);
  Profile p = profile();
  p.driver->version = "570.86.16";
  auto f = check_driver_kernels(p, inv);
  const Finding* stop = for_kernel(f, k);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->severity, Severity::error);
  EXPECT_EQ(stop->summary.rfind("nvidia-p2p/570.86.16 will not build for " + k +
                                    " (running, next boot): known breakage "
                                    "pci-resize-resource-exclude-bars will stop the build of 570.86.16 on " +
                                    k,
                                0),
            0u)
      << stop->summary;
  EXPECT_NE(stop->remediation.find("add {builtin: pci-resize-resource-exclude-bars}"), std::string::npos)
      << stop->remediation;
  // The run-time one (cudaHostRegisterIoMemory on >= 6.10) is a warning of its own.
  int runtime = 0;
  for (const auto& x : f) {
    if (x.severity == Severity::warning && x.summary.find("known breakage io-memory-pfn will break 570.86.16") == 0) {
      ++runtime;
    }
  }
  EXPECT_EQ(runtime, 1);
  EXPECT_EQ(nvidia::build_stops(inv, *p.driver).size(), 1u);
  EXPECT_EQ(stop->observed["forecast_from"], "version");

  // Once the tree is staged in /usr/src its own source decides: NVIDIA's conftest for the argument
  // means the tree carries the fix, and nothing stands in the way.
  r.write("usr/src/nvidia-p2p-570.86.16/kernel-open/nvidia/nv-pci.c",
          "#if defined(NV_PCI_RESIZE_RESOURCE_HAS_EXCLUDE_BARS_ARG)\n    r = pci_resize_resource(pci_dev, 1, s, "
          "0);\n#endif\n");
  const Inventory staged = probe::probe_inventory(root);
  EXPECT_FALSE(staged.nvidia.source_tests.at("/usr/src/nvidia-p2p-570.86.16").at("pci-resize-resource-exclude-bars"));
  EXPECT_TRUE(nvidia::build_stops(staged, *p.driver).empty());
  EXPECT_EQ(for_kernel(check_driver_kernels(p, staged), k)->severity, Severity::error);  // not built, but not a stop
  EXPECT_EQ(for_kernel(check_driver_kernels(p, staged), k)->summary,
            "nvidia-p2p/570.86.16 is not built for " + k + " (running, next boot)");
  fs::remove_all(r.dir / "usr/src");

  // With both builtin patches in the profile: nothing stands in the way; apply builds it.
  for (const char* b : {"pci-resize-resource-exclude-bars", "io-memory-pfn"}) {
    Artifact a;
    a.builtin = b;
    p.driver->kernel_module->patches.push_back(a);
  }
  f = check_driver_kernels(p, inv);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].summary, "nvidia-p2p/570.86.16 is not built for " + k + " (running, next boot)");
  EXPECT_EQ(f[0].observed["fixed_by_profile"], (nlohmann::json{"pci-resize-resource-exclude-bars", "io-memory-pfn"}));
  EXPECT_TRUE(nvidia::build_stops(inv, *p.driver).empty());
}

}  // namespace
}  // namespace p2pnode::checks

namespace p2pnode::checks {
namespace {

// The releases users run on trixie-backports' 7.3.4, through `check` on the recorded real headers:
// nothing claimed that the release fixes; what the table cannot know is said, not claimed; where the
// profile's tree lies on the machine (a path: folder) its source decides, and the finding says so.
TEST(DriverKernels, TodaysReleasesOn73ClaimOnlyWhatIsKnown) {
  KernelsRoot r;
  const std::string k73 = "7.3.4+deb13-amd64";
  r.headers(k73);
  r.write("proc/sys/kernel/osrelease", k73 + "\n");
  r.write("usr/bin/x86_64-linux-gnu-gcc-14", "");
  const sys::SysRoot root(r.dir);
  Inventory inv = probe::probe_inventory(root);
  Profile p = profile();
  p.driver->version = "610.57.04";
  auto f = check_driver_kernels(p, inv);
  const Finding* on73 = for_kernel(f, k73);
  ASSERT_NE(on73, nullptr);
  EXPECT_FALSE(on73->observed.contains("build_stops")) << on73->summary;
  EXPECT_EQ(on73->summary, "nvidia-p2p/610.57.04 is not built for " + k73 + " (running, next boot)");
  EXPECT_EQ(on73->observed["beyond_evidence"],
            (nlohmann::json{{{"id", "pahole-awk-gen-btf"}, {"newest_known_affected", "595.45.04"}}}));
  EXPECT_NE(
      on73->remediation.find("Not known either way for 610.57.04: pahole-awk-gen-btf (known up to 595.45.04); "
                             "nothing known says 610.57.04 carries the fix or not, so apply reads the tree's source "
                             "before it builds"),
      std::string::npos)
      << on73->remediation;
  EXPECT_EQ(on73->observed["forecast_from"], "version");
  EXPECT_TRUE(nvidia::build_stops(inv, *p.driver).empty());

  // 580.178.04: only the BTF step, which every 580 tag has and no release is recorded to fix.
  p.driver->version = "580.178.04";
  f = check_driver_kernels(p, inv);
  EXPECT_EQ(for_kernel(f, k73)->observed["build_stops"], (nlohmann::json{"pahole-awk-gen-btf"}));
  // 590.48.01 is still flagged.
  p.driver->version = "590.48.01";
  f = check_driver_kernels(p, inv);
  EXPECT_EQ(for_kernel(f, k73)->observed["build_stops"],
            (nlohmann::json{"dev-pagemap-page-free-renamed", "of-gpio-h-removed", "strncpy-removed",
                            "drm-atomic-state-renamed", "pahole-awk-gen-btf"}));

  // 610.57.04 from a path: tree on the machine whose Makefile still has the awk PAHOLE program:
  // read as apply reads a staged tree, the source decides, and the finding says where it read.
  p.driver->version = "610.57.04";
  p.driver->kernel_module->artifact.path = "/srv/trees/610.57.04-p2p";
  r.write("srv/trees/610.57.04-p2p/kernel-open/Makefile", "PAHOLE_AWK_PROGRAM = BEGIN { ... }\n");
  probe::use_profile_tree(root, p, inv);
  EXPECT_EQ(inv.nvidia.profile_tree, "/srv/trees/610.57.04-p2p");
  f = check_driver_kernels(p, inv);
  on73 = for_kernel(f, k73);
  EXPECT_EQ(on73->observed["build_stops"], (nlohmann::json{"pahole-awk-gen-btf"}));
  EXPECT_EQ(on73->observed["forecast_from"], "source of /srv/trees/610.57.04-p2p");
  EXPECT_NE(on73->remediation.find("(Read from the tree's source in /srv/trees/610.57.04-p2p.)"), std::string::npos)
      << on73->remediation;
  // The tree fixed there (NVIDIA's own BTF change): nothing stops it, nothing is left unknown.
  r.write("srv/trees/610.57.04-p2p/kernel-open/Makefile", "PAHOLE_AWK_PROGRAM = BEGIN { }\nGEN_BTF = gen-btf\n");
  inv.nvidia.source_tests.erase("/srv/trees/610.57.04-p2p");
  probe::use_profile_tree(root, p, inv);
  f = check_driver_kernels(p, inv);
  on73 = for_kernel(f, k73);
  EXPECT_FALSE(on73->observed.contains("build_stops"));
  EXPECT_FALSE(on73->observed.contains("beyond_evidence"));
}

}  // namespace
}  // namespace p2pnode::checks

namespace p2pnode::checks {
namespace {

// A fork's own DKMS package (its dkms.conf: PACKAGE_NAME nvidia, AUTOINSTALL) installed beside the
// profile's: both install updates/dkms/nvidia.ko.zst, so modprobe loads whichever came last. check
// names it and says how apply resolves it (driver.conflicts: remove).
TEST(DriverKernels, AForksOwnDkmsPackageIsNamed) {
  KernelsRoot r;
  const std::string k = "6.12.117+deb13-amd64";
  r.headers(k);
  r.write("proc/sys/kernel/osrelease", k + "\n");
  r.write("usr/bin/x86_64-linux-gnu-gcc-14", "");
  for (const char* m : {"nvidia.ko.zst", "nvidia-uvm.ko.zst"}) {
    r.write("var/lib/dkms/nvidia/610.57.04/" + k + "/x86_64/module/" + m, "fork");
    r.write("lib/modules/" + k + "/updates/dkms/" + m, "fork");
  }
  r.write("usr/src/nvidia-610.57.04/dkms.conf", "PACKAGE_NAME=\"nvidia\"\nAUTOINSTALL=\"yes\"\n");
  const sys::SysRoot root(r.dir);
  const Inventory inv = probe::probe_inventory(root);
  Profile p = profile();
  p.driver->version = "610.57.04";
  auto f = check_driver_kernels(p, inv);
  const Finding* other = nullptr;
  for (const auto& x : f) {
    if (x.observed.contains("dkms_package")) { other = &x; }
  }
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->severity, Severity::warning);
  EXPECT_EQ(other->summary,
            "DKMS package nvidia/610.57.04 (not the profile's nvidia-p2p/610.57.04) installs /lib/modules/" + k +
                "/updates/dkms/nvidia.ko.zst on " + k + ": modprobe loads whichever DKMS installed last");
  EXPECT_NE(other->remediation.find("Set driver.conflicts: remove and run `p2pnode apply`"), std::string::npos)
      << other->remediation;
  p.driver->conflicts = ConflictPolicy::remove;
  f = check_driver_kernels(p, inv);
  for (const auto& x : f) {
    if (!x.observed.contains("dkms_package")) { continue; }
    EXPECT_NE(x.remediation.find("it removes nvidia/610.57.04 from DKMS (dkms remove --all; its source stays in "
                                 "/usr/src/nvidia-610.57.04"),
              std::string::npos)
        << x.remediation;
  }
}

}  // namespace
}  // namespace p2pnode::checks
