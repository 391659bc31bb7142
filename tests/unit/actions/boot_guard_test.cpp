// driver.boot_guard through the seams: a root with a Debian grub.cfg, grub-set-default and
// update-grub scripted to do what the real ones do (saved_entry in grubenv; `set default=` from
// GRUB_DEFAULT, which the drop-in makes "saved"). The hold lands on the newest kernel with the
// module, a second apply does nothing, and the hold is lifted when the newest gets the module.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "actions/action.hpp"
#include "lifecycle/boot.hpp"
#include "lifecycle/boot_guard.hpp"
#include "probe/probe.hpp"
#include "unit/temp_dir.hpp"

using namespace p2pnode;
namespace fs = std::filesystem;

namespace {
const char* kEntries = R"(menuentry 'Debian GNU/Linux' $menuentry_id_option 'gnulinux-simple-0b1c' {
	linux	/boot/vmlinuz-6.1.0-57-amd64 root=UUID=0b1c ro quiet
}
submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option 'gnulinux-advanced-0b1c' {
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-57-amd64' $menuentry_id_option 'gnulinux-6.1.0-57-amd64-advanced-0b1c' {
		linux	/boot/vmlinuz-6.1.0-57-amd64 root=UUID=0b1c ro quiet
	}
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-56-amd64' $menuentry_id_option 'gnulinux-6.1.0-56-amd64-advanced-0b1c' {
		linux	/boot/vmlinuz-6.1.0-56-amd64 root=UUID=0b1c ro quiet
	}
}
)";

struct GuardBox {
  p2pnode::test::TempDir tmp{"bootguard"};
  fs::path dir = tmp.path();
  sys::ScriptedRunner runner;
  GuardBox() {
    for (const char* d : {"boot/grub", "etc/default", "proc", "sys"}) { fs::create_directories(dir / d); }
    write("etc/default/grub", "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"\"\n");
    update_grub();
    for (const char* k : {"6.1.0-57-amd64", "6.1.0-56-amd64"}) {
      fs::create_directories(dir / "lib/modules" / k / "kernel");
      write(std::string("boot/vmlinuz-") + k, "");
    }
    runner.on({"grub-set-default"}, [this](const sys::Command& c) {
      write("boot/grub/grubenv", "# GRUB Environment Block\nsaved_entry=" + c.argv.at(1) + "\n");
      return sys::exited_with(0);
    });
    runner.on({"update-grub"}, [this](const sys::Command&) {
      update_grub();
      return sys::exited_with(0, "", "Generating grub configuration file ...\ndone\n");
    });
  }
  void write(const std::string& rel, const std::string& text) { std::ofstream(dir / rel, std::ios::binary) << text; }
  // What update-grub writes: GRUB_DEFAULT=saved (from a grub.d drop-in) becomes ${saved_entry}.
  void update_grub() {
    const bool saved = fs::exists(dir / "etc/default/grub.d/p2pnode-boot-guard.cfg");
    write("boot/grub/grub.cfg", std::string("set default=\"") + (saved ? "${saved_entry}" : "0") + "\"\n" + kEntries);
  }
  Inventory inventory(bool newest_has_module) {
    Inventory inv = probe::probe_inventory(sys::SysRoot(dir.string()));
    for (auto& k : inv.kernels.kernels) {
      const bool has = k.release == "6.1.0-56-amd64" || newest_has_module;
      k.dkms = {{"nvidia-p2p", "550.90.07", has, has}};
    }
    return inv;
  }
};

Profile profile() {
  Profile p;
  p.name = "guard";
  DriverSpec d;
  d.version = "550.90.07";
  d.kernel_module = ModuleSource{};
  p.driver = d;
  return p;
}

actions::Action& guard() {
  for (const auto& a : actions::all_actions()) {
    if (a->id() == "driver.boot_guard") { return *a; }
  }
  throw std::runtime_error("no driver.boot_guard");
}
}  // namespace

TEST(BootGuardAction, HoldsGrubOnTheNewestKernelWithTheModuleThenLiftsIt) {
  GuardBox box;
  const sys::SysRoot root(box.dir.string());
  const Profile p = profile();
  Inventory inv = box.inventory(false);
  ASSERT_EQ(inv.kernels.next_boot, "6.1.0-57-amd64");
  const auto steps = guard().plan(p, inv, root);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_NE(steps[0].description.find("hold GRUB's default on 6.1.0-56-amd64"), std::string::npos)
      << steps[0].description;

  actions::ApplyContext ctx{root, box.runner, p};
  auto r = guard().apply(ctx, inv);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  EXPECT_EQ(r[0].after["next_boot"], "6.1.0-56-amd64");
  EXPECT_EQ(lifecycle::next_boot_kernel(root).kernel, "6.1.0-56-amd64");
  EXPECT_TRUE(fs::exists(box.dir / "etc/default/grub.d/p2pnode-boot-guard.cfg"));
  ASSERT_EQ(box.runner.calls().size(), 2u);
  EXPECT_EQ(box.runner.calls()[0], (std::vector<std::string>{"update-grub"}));
  EXPECT_EQ(
      box.runner.calls()[1],
      (std::vector<std::string>{"grub-set-default", "gnulinux-advanced-0b1c>gnulinux-6.1.0-56-amd64-advanced-0b1c"}));

  // Held: the next look plans nothing, and the check says why GRUB is held.
  inv = box.inventory(false);
  EXPECT_TRUE(inv.kernels.boot_guard_held);
  EXPECT_TRUE(guard().plan(p, inv, root).empty());

  // The module arrives for 6.1.0-57: the hold is lifted and GRUB boots the newest again.
  inv = box.inventory(true);
  ASSERT_EQ(guard().plan(p, inv, root).size(), 1u);
  r = guard().apply(ctx, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  EXPECT_FALSE(fs::exists(box.dir / "etc/default/grub.d/p2pnode-boot-guard.cfg"));
  EXPECT_EQ(lifecycle::next_boot_kernel(root).kernel, "6.1.0-57-amd64");
  EXPECT_TRUE(guard().plan(p, box.inventory(true), root).empty());
}

TEST(BootGuardAction, TheEntryIsTakenFromTheGrubCfgThatUpdateGrubWrote) {
  // A grub.cfg written by hand (or by another tool) names its entries differently from the one
  // update-grub writes next: the saved entry must be a path in the new one.
  GuardBox box;
  box.write("boot/grub/grub.cfg",
            "set default=0\nmenuentry 'Debian GNU/Linux, with Linux 6.1.0-56-amd64' {\n"
            "  linux /boot/vmlinuz-6.1.0-56-amd64 root=/dev/sda1\n}\n");
  const sys::SysRoot root(box.dir.string());
  const Profile p = profile();
  actions::ApplyContext ctx{root, box.runner, p};
  const auto r = guard().apply(ctx, box.inventory(false));
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  ASSERT_EQ(box.runner.calls().size(), 2u);
  EXPECT_EQ(
      box.runner.calls()[1],
      (std::vector<std::string>{"grub-set-default", "gnulinux-advanced-0b1c>gnulinux-6.1.0-56-amd64-advanced-0b1c"}));
  EXPECT_EQ(lifecycle::next_boot_kernel(root).kernel, "6.1.0-56-amd64");
}

TEST(BootGuardAction, AFailedUpdateGrubIsAFailureThatSaysSo) {
  GuardBox box;
  box.runner.on({"update-grub"},
                sys::exited_with(1, "", "/usr/sbin/grub-mkconfig: 1: cannot open /boot/grub/grub.cfg.new\n"));
  const sys::SysRoot root(box.dir.string());
  const Profile p = profile();
  actions::ApplyContext ctx{root, box.runner, p};
  const auto r = guard().apply(ctx, box.inventory(false));
  EXPECT_EQ(r[0].outcome, StepOutcome::failed);
  EXPECT_NE(r[0].message.find("holding GRUB on 6.1.0-56-amd64: update-grub exit 1"), std::string::npos) << r[0].message;
  // Nothing half-done: the drop-in is gone again, so no one reads a hold that GRUB does not have.
  EXPECT_NE(r[0].message.find("is as it was"), std::string::npos) << r[0].message;
  EXPECT_FALSE(fs::exists(box.dir / "etc/default/grub.d/p2pnode-boot-guard.cfg"));
  EXPECT_FALSE(box.inventory(false).kernels.boot_guard_held);
}

TEST(BootGuardAction, AReleaseThatFailsKeepsTheHoldSoTheNextPassTriesAgain) {
  GuardBox box;
  const sys::SysRoot root(box.dir.string());
  const Profile p = profile();
  actions::ApplyContext ctx{root, box.runner, p};
  ASSERT_EQ(guard().apply(ctx, box.inventory(false))[0].outcome, StepOutcome::changed);
  const fs::path dropin = box.dir / "etc/default/grub.d/p2pnode-boot-guard.cfg";
  std::ifstream in(dropin);
  const std::string held((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(held.find("GRUB_DEFAULT=saved"), std::string::npos);

  // The module arrives for 6.1.0-57, but update-grub fails: without the drop-in put back the node
  // would stay on 6.1.0-56 with nothing left to release.
  box.runner.on({"update-grub"}, sys::exited_with(1, "", "grub-mkconfig: cannot open /boot/grub/grub.cfg.new\n"));
  auto r = guard().apply(ctx, box.inventory(true));
  EXPECT_EQ(r[0].outcome, StepOutcome::failed);
  EXPECT_NE(r[0].message.find("releasing GRUB's hold: update-grub exit 1"), std::string::npos) << r[0].message;
  std::ifstream again(dropin);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>()), held);
  ASSERT_EQ(guard().plan(p, box.inventory(true), root).size(), 1u);

  // update-grub works again: the next pass releases.
  box.runner.on({"update-grub"}, [&box](const sys::Command&) {
    box.update_grub();
    return sys::exited_with(0);
  });
  r = guard().apply(ctx, box.inventory(true));
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  EXPECT_FALSE(fs::exists(dropin));
  EXPECT_EQ(lifecycle::next_boot_kernel(root).kernel, "6.1.0-57-amd64");
}

TEST(BootGuardAction, AHoldThatFailsAfterUpdateGrubPutsGrubCfgBack) {
  GuardBox box;
  box.runner.on({"grub-set-default"}, sys::exited_with(1, "", "grub-editenv: error: cannot open /boot/grub/grubenv\n"));
  const sys::SysRoot root(box.dir.string());
  const Profile p = profile();
  actions::ApplyContext ctx{root, box.runner, p};
  const auto r = guard().apply(ctx, box.inventory(false));
  EXPECT_EQ(r[0].outcome, StepOutcome::failed);
  EXPECT_NE(r[0].message.find("grub-set-default"), std::string::npos) << r[0].message;
  EXPECT_NE(r[0].message.find("and grub.cfg are as they were"), std::string::npos) << r[0].message;
  EXPECT_FALSE(fs::exists(box.dir / "etc/default/grub.d/p2pnode-boot-guard.cfg"));
  ASSERT_EQ(box.runner.calls().size(), 3u);
  EXPECT_EQ(box.runner.calls()[2], (std::vector<std::string>{"update-grub"}));
  std::ifstream cfg(box.dir / "boot/grub/grub.cfg");
  std::string first;
  std::getline(cfg, first);
  EXPECT_EQ(first, "set default=\"0\"");
}

TEST(BootGuardAction, TheProfileMayAllowBootingWithoutTheModule) {
  GuardBox box;
  const sys::SysRoot root(box.dir.string());
  Profile p = profile();
  p.driver->allow_boot_without_module = true;
  EXPECT_TRUE(guard().plan(p, box.inventory(false), root).empty());
}
