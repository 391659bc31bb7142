#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lifecycle/reload.hpp"
#include "lifecycle/verify.hpp"

namespace p2pnode::nvidia {
namespace {
namespace fs = std::filesystem;

ReloadInputs base() {
  ReloadInputs in;
  in.loaded = {"nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia_peermem"};
  in.loaded_version = "550.54.15";
  in.disk_version = "550.90.07";
  in.wanted_version = "550.90.07";
  in.allow_reload = true;
  return in;
}

TEST(Reload, UnloadOrderIsUsersFirst) {
  const auto d = decide_reload(base());
  EXPECT_EQ(d.kind, ReloadKind::reload);
  EXPECT_EQ(d.unload, (std::vector<std::string>{"nvidia_peermem", "nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia"}));
}

TEST(Reload, NotAllowedMeansRebootRequired) {
  auto in = base();
  in.allow_reload = false;
  const auto d = decide_reload(in);
  EXPECT_EQ(d.kind, ReloadKind::reboot_required);
  EXPECT_NE(d.reason.find("reboot required"), std::string::npos);
}

TEST(Reload, HoldersRefuseWithPidsUnlessKillAllowed) {
  auto in = base();
  in.holders = {{1234, "python3", {"/dev/nvidia0"}}, {99, "nvidia-persiste", {"/dev/nvidiactl"}}};
  auto d = decide_reload(in);
  EXPECT_EQ(d.kind, ReloadKind::refused);
  EXPECT_NE(d.reason.find("1234 (python3)"), std::string::npos);
  EXPECT_NE(d.reason.find("99 (nvidia-persiste)"), std::string::npos);
  in.allow_kill_holders = true;
  d = decide_reload(in);
  EXPECT_EQ(d.kind, ReloadKind::reload);
  EXPECT_EQ(d.kill, (std::vector<int>{1234, 99}));
}

TEST(Reload, SameVersionSameSrcversionIsNothing) {
  auto in = base();
  in.loaded_version = "550.90.07";
  in.loaded_srcversion = "ABC";
  in.disk_srcversion = "ABC";
  EXPECT_EQ(decide_reload(in).kind, ReloadKind::not_needed);
  in.disk_srcversion = "DEF";  // rebuilt with a new patch, same version: the old one is still loaded
  const auto d = decide_reload(in);
  EXPECT_EQ(d.kind, ReloadKind::reload);
  EXPECT_NE(d.reason.find("srcversion"), std::string::npos);
}

TEST(Reload, NothingLoaded) {
  auto in = base();
  in.loaded.clear();
  in.loaded_version.reset();
  EXPECT_EQ(decide_reload(in).kind, ReloadKind::load);
  EXPECT_TRUE(decide_reload(in).unload.empty());
  in.allow_reload = false;
  EXPECT_EQ(decide_reload(in).kind, ReloadKind::reboot_required);
}

TEST(Reload, WrongModuleOnDiskRefuses) {
  auto in = base();
  in.disk_version = "550.54.15";
  EXPECT_EQ(decide_reload(in).kind, ReloadKind::refused);
}

TEST(Reload, FindsHoldersFromProcFd) {
  char tmpl[] = "/tmp/p2pnode-reload-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  for (const auto& [pid, comm, target] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"1234", "python3", "/dev/nvidia0"}, {"77", "bash", "/dev/pts/0"}, {"99", "nvidia-persiste", "/dev/nvidiactl"}}) {
    fs::create_directories(dir / "proc" / pid / "fd");
    std::ofstream(dir / "proc" / pid / "comm") << comm << "\n";
    fs::create_symlink(target, dir / "proc" / pid / "fd" / "3");
    fs::create_symlink(target, dir / "proc" / pid / "fd" / "4");
  }
  fs::create_directories(dir / "proc/self");
  const auto h = find_holders(sys::SysRoot(dir));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].pid, 99);
  EXPECT_EQ(h[0].comm, "nvidia-persiste");
  EXPECT_EQ(h[1].pid, 1234);
  EXPECT_EQ(h[1].files, (std::vector<std::string>{"/dev/nvidia0"}));
  EXPECT_EQ(describe(h), "99 (nvidia-persiste), 1234 (python3)");
  fs::remove_all(dir);
}

TEST(Verify, ApiMismatchOnlySinceTheLastLoad) {
  const std::string before =
      "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.54.15\n"
      "NVRM: API mismatch: the client has the version 550.90.07, but\n";
  EXPECT_TRUE(api_mismatch_since_load(before));
  EXPECT_FALSE(api_mismatch_since_load(before + "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.90.07\n"));
  EXPECT_FALSE(api_mismatch_since_load(""));
}

}  // namespace
}  // namespace p2pnode::nvidia
