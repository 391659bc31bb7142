// The next kernel: apt's answers decoded (recorded from Debian 12), the candidate found through a
// scripted apt-cache, the staged dkms.conf's patches, and a recorded verdict as check and metric.
#include "lifecycle/next_kernel.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "checks/check.hpp"
#include "engine/metrics.hpp"
#include "probe/probe.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::lifecycle {
namespace {
namespace fs = std::filesystem;

// `apt-cache policy linux-image-amd64 linux-image-cloud-amd64` on Debian 12 (the second not installed).
const char* kPolicy = R"(linux-image-amd64:
  Installed: 6.1.176-1
  Candidate: 6.1.192-2
  Version table:
     6.1.192-2 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
 *** 6.1.176-1 500
        100 /var/lib/dpkg/status
linux-image-cloud-amd64:
  Installed: (none)
  Candidate: 6.1.192-2
  Version table:
     6.1.192-2 500
)";

TEST(NextKernel, DecodesAptPolicy) {
  const auto p = parse_apt_policy(kPolicy);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.at("linux-image-amd64").installed, "6.1.176-1");
  EXPECT_EQ(p.at("linux-image-amd64").candidate, "6.1.192-2");
  EXPECT_EQ(p.at("linux-image-cloud-amd64").installed, "");
  EXPECT_TRUE(parse_apt_policy("").empty());
}

TEST(NextKernel, DecodesAptDependsTakingTheFirstAlternative) {
  const char* deps =
      "linux-headers-6.1.0-56-amd64\n  Depends: linux-headers-6.1.0-56-common\n"
      "  Depends: linux-kbuild-6.1\n |Depends: linux-compiler-gcc-12-x86\n  Depends: gcc-12\n"
      "  Depends: <libc-dev>\n  Recommends: pahole\n";
  EXPECT_EQ(parse_apt_depends(deps), (std::vector<std::string>{"linux-headers-6.1.0-56-common", "linux-kbuild-6.1",
                                                               "linux-compiler-gcc-12-x86"}));
  EXPECT_EQ(release_of_image_package("linux-image-6.1.0-56-amd64"), "6.1.0-56-amd64");
  EXPECT_EQ(release_of_image_package("linux-image-6.1.0-56-amd64-unsigned"), "6.1.0-56-amd64");
  EXPECT_EQ(release_of_image_package("linux-image-6.8.0-49-generic"), "6.8.0-49-generic");
  EXPECT_EQ(release_of_image_package("linux-image-amd64"), "");
  EXPECT_EQ(release_of_image_package("linux-headers-6.1.0-56-amd64"), "");
}

TEST(NextKernel, ReadsTheStagedPatchesAndTheirMatch) {
  const char* conf =
      "PACKAGE_NAME=\"nvidia-p2p\"\nPATCH[1]=\"02-io-memory-pfn.patch\"\n"
      "PATCH_MATCH[1]=\"^(6\\\\.(10|[2-9][0-9]{1}))([.-]|$)\"\nPATCH[0]=\"01-pci.patch\"\n";
  const auto p = parse_dkms_patches(conf);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].file, "01-pci.patch");
  EXPECT_EQ(p[0].match, "");
  EXPECT_EQ(p[1].file, "02-io-memory-pfn.patch");
  EXPECT_EQ(p[1].match, "^(6\\.(10|[2-9][0-9]{1}))([.-]|$)");
}

struct NextKernelRoot {
  p2pnode::test::TempDir tmp{"next"};
  fs::path dir = tmp.path();
};

TEST(NextKernel, FindsTheCandidateOfTheInstalledMetapackage) {
  NextKernelRoot r;
  const sys::SysRoot root(r.dir);
  sys::ScriptedRunner runner;
  runner.on({"apt-cache", "policy"}, sys::exited_with(0, kPolicy));
  runner.on({"apt-cache", "depends", "linux-image-amd64=6.1.192-2"},
            sys::exited_with(0, "linux-image-amd64\n  Depends: linux-image-6.1.0-56-amd64\n"));
  auto n = find_next_kernel(root, runner);
  ASSERT_TRUE(n) << n.error().message;
  ASSERT_TRUE(*n);
  EXPECT_EQ((*n)->meta, "linux-image-amd64");
  EXPECT_EQ((*n)->version, "6.1.192-2");
  EXPECT_EQ((*n)->release, "6.1.0-56-amd64");
  EXPECT_FALSE((*n)->installed);
  fs::create_directories(r.dir / "lib/modules/6.1.0-56-amd64");
  EXPECT_TRUE((*find_next_kernel(root, runner))->installed);

  // Ubuntu 22.04 on its HWE kernel: the metapackage is linux-image-generic-hwe-22.04 (the shape of
  // apt-cache policy is apt's own, the same on both distributions).
  sys::ScriptedRunner hwe;
  hwe.on({"apt-cache", "policy"},
         sys::exited_with(
             0,
             "linux-image-amd64:\n  Installed: (none)\n  Candidate: (none)\n"
             "linux-image-generic-hwe-22.04:\n  Installed: 6.8.0.49.52~22.04.1\n  Candidate: 6.8.0.52.55~22.04.1\n"));
  hwe.on({"apt-cache", "depends", "linux-image-generic-hwe-22.04=6.8.0.52.55~22.04.1"},
         sys::exited_with(
             0, "linux-image-generic-hwe-22.04\n  Depends: linux-image-6.8.0-52-generic\n  Depends: linux-firmware\n"));
  auto u = find_next_kernel(root, hwe);
  ASSERT_TRUE(u) << u.error().message;
  ASSERT_TRUE(*u);
  EXPECT_EQ((*u)->meta, "linux-image-generic-hwe-22.04");
  EXPECT_EQ((*u)->release, "6.8.0-52-generic");

  sys::ScriptedRunner none;
  none.on({"apt-cache", "policy"},
          sys::exited_with(0, "linux-image-amd64:\n  Installed: (none)\n  Candidate: 6.1.192-2\n"));
  auto n2 = find_next_kernel(root, none);
  ASSERT_TRUE(n2);
  EXPECT_FALSE(*n2);
}

TEST(NextKernel, TheRecordedVerdictIsAFindingAndAMetric) {
  NextKernelRoot r;
  KernelVerdict v;
  v.release = "6.1.0-57-amd64";
  v.package_version = "6.1.200-1";
  v.module = "nvidia-p2p/550.90.07";
  v.summary =
      "the next kernel 6.1.0-57-amd64 (6.1.200-1) breaks nvidia-p2p/550.90.07: known breakage "
      "pci-resize-resource-exclude-bars (fixed by the builtin patch pci-resize-resource-exclude-bars)";
  v.breakages = v.fixes = {"pci-resize-resource-exclude-bars"};
  fs::create_directories(r.dir / "var/lib/p2pnode");
  std::ofstream(r.dir / "var/lib/p2pnode/next-kernel.json") << to_json(v).dump(2);
  const Inventory inv = probe::probe_inventory(sys::SysRoot(r.dir));
  ASSERT_TRUE(inv.kernels.next_candidate);
  Profile p;
  DriverSpec d;
  d.version = "550.90.07";
  d.kernel_module = ModuleSource{};
  d.kernel_module->name = "nvidia-p2p";
  p.driver = d;
  auto fs = checks::check_driver_kernels(p, inv);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].subject, "6.1.0-57-amd64");
  EXPECT_EQ(fs[0].severity, Severity::warning);
  EXPECT_EQ(fs[0].summary, v.summary);
  EXPECT_NE(fs[0].remediation.find("Add {builtin: pci-resize-resource-exclude-bars}"), std::string::npos);
  engine::RecordedState s;
  s.findings.push_back(to_json(fs[0]));
  const auto m = engine::render_metrics(s, engine::Runtime{});
  EXPECT_NE(m.find("p2pnode_next_kernel_keeps_p2p{kernel=\"6.1.0-57-amd64\"} 0"), std::string::npos) << m;
  EXPECT_EQ(m.find("p2pnode_kernel_module_installed{kernel=\"6.1.0-57-amd64\""), std::string::npos);

  // With the patch in the profile the advice is to hold; another module's record is not this profile's.
  Artifact a;
  a.builtin = "pci-resize-resource-exclude-bars";
  p.driver->kernel_module->patches.push_back(a);
  fs = checks::check_driver_kernels(p, inv);
  EXPECT_NE(fs[0].remediation.find("Hold the kernel"), std::string::npos) << fs[0].remediation;
  p.driver->version = "565.57.01";
  EXPECT_TRUE(checks::check_driver_kernels(p, inv).empty());
}

}  // namespace
}  // namespace p2pnode::lifecycle
