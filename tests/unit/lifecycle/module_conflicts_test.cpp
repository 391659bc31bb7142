// What else could provide our modules: other DKMS registrations building a module of the same name,
// stale copies outside updates/dkms.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lifecycle/module_conflicts.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::lifecycle {
namespace {
namespace fs = std::filesystem;

void put(const fs::path& p, const std::string& text = "") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(ModuleConflicts, BuiltNamesReadsEveryQuotingDkmsAccepts) {
  EXPECT_EQ(built_names("PACKAGE_NAME=x\nBUILT_MODULE_NAME[0]=\"nvidia\"\nBUILT_MODULE_NAME[1]='nvidia-uvm'\r\n"
                        "BUILT_MODULE_NAME[2]= nvidia-drm\n"),
            (std::vector<std::string>{"nvidia", "nvidia-uvm", "nvidia-drm"}));
  EXPECT_TRUE(built_names("PACKAGE_NAME=x\n").empty());
}

TEST(ModuleConflicts, OtherRegistrationsAndStaleCopies) {
  const test::TempDir t("module-conflicts");
  put(t / "var/lib/dkms/nvidia/550.54.15/source/dkms.conf", "BUILT_MODULE_NAME[0]=\"nvidia\"\n");
  put(t / "var/lib/dkms/other/1.0/source/dkms.conf", "BUILT_MODULE_NAME[0]=\"other\"\n");
  put(t / "var/lib/dkms/p2p/1.5/source/dkms.conf", "BUILT_MODULE_NAME[0]=\"nvidia\"\n");  // ours
  put(t / "var/lib/dkms/p2p/1.4/source/dkms.conf", "BUILT_MODULE_NAME[0]=\"elsewhere\"\n");
  put(t / "lib/modules/6.1.0-56-amd64/kernel/drivers/video/nvidia.ko.xz");
  put(t / "lib/modules/6.1.0-56-amd64/updates/dkms/nvidia.ko.xz");  // DKMS's own: not stale
  put(t / "lib/modules/6.1.0-56-amd64/build/nvidia.ko");            // the headers' tree: never
  put(t / "lib/modules/6.1.0-56-amd64/extra/nvidia-uvm.ko");
  put(t / "lib/modules/6.1.0-56-amd64/extra/nvidia.txt");
  const sys::SysRoot root(t.path());
  ModuleTarget target;
  target.name = "p2p";
  target.version = "1.5";
  EXPECT_EQ(other_registrations(root, target, {"nvidia", "nvidia-uvm"}),
            (std::vector<std::pair<std::string, std::string>>{{"nvidia", "550.54.15"}, {"p2p", "1.4"}}));
  EXPECT_EQ(stale_modules(root, {"nvidia", "nvidia-uvm"}, {"6.1.0-56-amd64", "6.1.0-55-amd64"}),
            (std::vector<std::string>{"/lib/modules/6.1.0-56-amd64/extra/nvidia-uvm.ko",
                                      "/lib/modules/6.1.0-56-amd64/kernel/drivers/video/nvidia.ko.xz"}));
  EXPECT_EQ(root.write_count(), 0u);
}

}  // namespace
}  // namespace p2pnode::lifecycle
