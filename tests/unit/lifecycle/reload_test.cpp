#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lifecycle/reload.hpp"
#include "lifecycle/verify.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::lifecycle {
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
  EXPECT_EQ(d.unload,
            (std::vector<std::string>{"nvidia_peermem", "nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia"}));
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

// The remediation ladder's reload_module rung: the module that matches is reloaded all the same,
// without driver.reload.allow (the profile allowed the rung), and holders still refuse it.
TEST(Reload, TheLadderReloadsAModuleThatMatches) {
  auto in = base();
  in.loaded_version = "550.90.07";
  in.allow_reload = false;
  in.force = true;
  auto d = decide_reload(in);
  EXPECT_EQ(d.kind, ReloadKind::reload);
  EXPECT_EQ(d.reason, "the remediation ladder reloads 550.90.07 (P2P was lost): unload and load");
  EXPECT_EQ(d.unload.front(), "nvidia_peermem");
  in.holders = {{1234, "python3", {"/dev/nvidia0"}}};
  EXPECT_EQ(decide_reload(in).kind, ReloadKind::refused);
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

// A failed build must not turn into "reboot to load X".
TEST(Reload, NothingBuiltIsNeverARebootRequest) {
  auto in = base();
  in.disk_version.reset();  // the build failed: no DKMS copy for the running kernel
  in.running_kernel = "6.1.0-56-amd64";
  in.next_boot_kernel = "6.1.0-56-amd64";
  for (bool allow : {true, false}) {
    for (bool loaded : {true, false}) {
      in.allow_reload = allow;
      if (loaded) {
        in.loaded = {"nvidia"}, in.loaded_version = "550.54.15";
      } else {
        in.loaded.clear(), in.loaded_version.reset();
      }
      const auto d = decide_reload(in);
      EXPECT_EQ(d.kind, ReloadKind::nothing_built) << allow << loaded;
      EXPECT_EQ(d.reason.find("reboot to load"), std::string::npos) << d.reason;
      EXPECT_NE(d.reason.find("no 550.90.07 module is installed for the running kernel 6.1.0-56-amd64"),
                std::string::npos)
          << d.reason;
      EXPECT_TRUE(d.unload.empty());
    }
  }
  // The wanted version already loaded (built earlier, since removed): nothing to do, no alarm here
  // (driver.kernels reports the missing module).
  in.loaded = {"nvidia"};
  in.loaded_version = "550.90.07";
  EXPECT_EQ(decide_reload(in).kind, ReloadKind::not_needed);
}

TEST(Reload, BuiltOnlyForTheNextBootKernelAsksForThatReboot) {
  auto in = base();
  in.disk_version.reset();
  in.loaded.clear();
  in.loaded_version.reset();
  in.running_kernel = "6.1.0-55-amd64";
  in.next_boot_kernel = "6.1.0-56-amd64";
  in.kernels_with_module = {"6.1.0-56-amd64"};
  const auto d = decide_reload(in);
  EXPECT_EQ(d.kind, ReloadKind::reboot_required);
  EXPECT_EQ(d.reason,
            "550.90.07 is installed for 6.1.0-56-amd64 (the kernel the boot loader starts next) but not for "
            "the running 6.1.0-55-amd64: reboot into 6.1.0-56-amd64 to load it");
  in.kernels_with_module = {"6.1.0-54-amd64"};  // an older kernel the boot loader does not start
  EXPECT_EQ(decide_reload(in).kind, ReloadKind::nothing_built);
  EXPECT_NE(decide_reload(in).reason.find("nor for the next boot kernel 6.1.0-56-amd64"), std::string::npos);
}

TEST(Reload, WrongModuleOnDiskRefuses) {
  auto in = base();
  in.disk_version = "550.54.15";
  EXPECT_EQ(decide_reload(in).kind, ReloadKind::refused);
}

TEST(Reload, FindsHoldersFromProcFd) {
  const p2pnode::test::TempDir scratch("reload");
  const fs::path dir = scratch.path();
  for (const auto& [pid, comm, target] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"1234", "python3", "/dev/nvidia0"},
                                                                      {"77", "bash", "/dev/pts/0"},
                                                                      {"99", "nvidia-persiste", "/dev/nvidiactl"}}) {
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
}

TEST(Verify, ApiMismatchOnlySinceTheLastLoad) {
  const std::string before =
      "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.54.15\n"
      "NVRM: API mismatch: the client has the version 550.90.07, but\n";
  EXPECT_TRUE(api_mismatch_since_load(before));
  EXPECT_FALSE(
      api_mismatch_since_load(before + "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.90.07\n"));
  EXPECT_FALSE(api_mismatch_since_load(""));
  // Anchored: the driver's own line (bare, as journalctl -o cat prints it, or with dmesg's time),
  // never a message that only quotes the words.
  EXPECT_TRUE(api_mismatch_since_load("[   12.345678] NVRM: API mismatch: the client has the version 550.90.07\n"));
  EXPECT_FALSE(api_mismatch_since_load(
      "audit: type=1400 apparmor=\"DENIED\" comm=\"NVRM: API mismatch\" name=\"/dev/nvidia0\"\n"));
  EXPECT_TRUE(api_mismatch_since_load(before + "python3[4242]: segfault in NVRM: loading NVIDIA UNIX\n"))
      << "a quoted 'NVRM: loading' is not a reload";
}

}  // namespace
}  // namespace p2pnode::lifecycle
