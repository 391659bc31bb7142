// driver.reload: the loaded module replaced by the installed one in order, or a reboot asked for.
#include <gtest/gtest.h>
#include <lzma.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "actions/driver_install.hpp"
#include "driver_fixture.hpp"
#include "lifecycle/artifact.hpp"

namespace p2pnode::actions {
namespace {
namespace fs = std::filesystem;

// driver.version 550.90.07 with a kernel module (its DKMS source in /usr/src/nvidia-p2p-550.90.07).
Profile reload_profile() {
  DriverSpec d;
  d.version = "550.90.07";
  d.kernel_module = ModuleSource{};
  Profile p;
  p.driver = d;
  return p;
}
Inventory on_kernel() {
  Inventory inv;
  inv.kernel.release = kKernel;
  return inv;
}

TEST(DriverReload, NotAllowedPlansARebootAndRunsNothing) {
  Box box;
  box.write("usr/src/nvidia-p2p-550.90.07/kernel-open/Makefile", "");
  box.write("sys/module/nvidia/version", "550.54.15\n");
  box.write("lib/modules/6.1.0-56-amd64/updates/dkms/nvidia.ko", std::string("x\0srcversion=ABC\0", 17));
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  const Profile p = reload_profile();
  const Inventory inv = on_kernel();
  auto steps = make_driver_reload()->plan(p, inv, root);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].reboot_required);
  ApplyContext ctx{root, runner, p};
  auto r = make_driver_reload()->apply(ctx, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::reboot_required);
  EXPECT_TRUE(runner.calls().empty());
}

// Debian 13's DKMS installs nvidia.ko.xz: the installed module's srcversion is still read, so a
// rebuild of the same version (a new patch) is not taken for the loaded one.
TEST(DriverReload, CompressedModuleWithAnotherSrcversionIsNotTheLoadedOne) {
  Box box;
  box.write("usr/src/nvidia-p2p-550.90.07/kernel-open/Makefile", "");
  box.write("sys/module/nvidia/version", "550.90.07\n");
  box.write("sys/module/nvidia/srcversion", "OLD\n");
  const std::string elf("x\0srcversion=NEW\0", 17);
  std::string xz(elf.size() + 512, '\0');
  std::size_t n = 0;
  ASSERT_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const std::uint8_t*>(elf.data()),
                                    elf.size(), reinterpret_cast<std::uint8_t*>(xz.data()), &n, xz.size()),
            LZMA_OK);
  xz.resize(n);
  box.write("lib/modules/6.1.0-56-amd64/updates/dkms/nvidia.ko.xz", xz);
  const sys::SysRoot root(box.dir);
  const Profile p = reload_profile();
  const Inventory inv = on_kernel();
  auto steps = make_driver_reload()->plan(p, inv, root);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_NE(steps[0].description.find("srcversion OLD differs from the installed one's NEW"), std::string::npos)
      << steps[0].description;
}

TEST(DriverReload, ReloadsInOrderAndVerifies) {
  Box box;
  box.write("usr/src/nvidia-p2p-550.90.07/kernel-open/Makefile", "");
  for (const char* m : {"nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"}) {
    box.write(std::string("sys/module/") + m + "/refcnt", "0\n");
  }
  box.write("sys/module/nvidia/version", "550.54.15\n");
  box.write("lib/modules/6.1.0-56-amd64/updates/dkms/nvidia.ko", std::string("x\0srcversion=NEW\0", 17));
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  runner.on({"systemctl", "is-active"}, sys::exited_with(0));
  runner.on({"systemctl"}, sys::exited_with(0));
  runner.on({"modprobe"}, sys::exited_with(0));
  runner.on({"modprobe", "-r"}, sys::exited_with(0));
  runner.on({"modprobe", "nvidia"}, [&](const sys::Command&) {
    box.write("sys/module/nvidia/version", "550.90.07\n");
    box.write("sys/module/nvidia/srcversion", "NEW\n");
    box.write("proc/driver/nvidia/version",
              "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build  (root@box)  now\n");
    return sys::exited_with(0);
  });
  runner.on({"modinfo", "-n"}, sys::exited_with(0, "/lib/modules/6.1.0-56-amd64/updates/dkms/nvidia.ko\n"));
  runner.on({"modinfo", "-F", "srcversion"}, sys::exited_with(0, "NEW\n"));
  runner.on({"journalctl"},
            sys::exited_with(0, "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.90.07\n"));
  Profile p = reload_profile();
  p.driver->allow_reload = true;
  p.driver->stop_units = {"nvidia-persistenced.service"};
  const Inventory inv = on_kernel();
  ApplyContext ctx{root, runner, p};
  auto r = make_driver_reload()->apply(ctx, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  std::vector<std::string> modprobes;
  for (const auto& c : runner.calls()) {
    if (c[0] == "modprobe") { modprobes.push_back(c[1] + (c.size() > 2 ? " " + c[2] : "")); }
    // systemctl stop|start -- UNIT: the unit after --, never read as an option.
    if (c[0] == "systemctl" && c[1] != "is-active" && c.size() == 4 && c[2] == "--") {
      modprobes.push_back(c[1] + " " + c[3]);
    }
  }
  EXPECT_EQ(modprobes,
            (std::vector<std::string>{"stop nvidia-persistenced.service", "-r nvidia_drm", "-r nvidia_modeset",
                                      "-r nvidia_uvm", "-r nvidia", "nvidia", "nvidia_uvm", "nvidia_modeset",
                                      "nvidia_drm", "start nvidia-persistenced.service"}));
}

// Builtin patches are staged from the binary's own copies; PATCH_MATCH where the table gives a range.
}  // namespace
}  // namespace p2pnode::actions
