// lifecycle/boot_guard: when GRUB is held on an older kernel, when the hold is lifted, and which
// GRUB entry boots a kernel (the submenu path grub-set-default takes, never the recovery entry).
#include "lifecycle/boot_guard.hpp"

#include <gtest/gtest.h>

#include "lifecycle/boot.hpp"

namespace p2pnode::lifecycle {
namespace {
using What = BootGuardDecision::What;

BootGuardInputs box(std::vector<KernelModuleState> k, std::string next, bool held = false, bool allow = false) {
  return {std::move(k), std::move(next), held, allow};
}

TEST(BootGuard, ANewKernelWithoutTheModuleIsHeldBackOnTheNewestThatHasIt) {
  auto d = decide_boot_guard(
      box({{"6.1.0-57-amd64", false}, {"6.1.0-56-amd64", true}, {"6.1.0-55-amd64", true}}, "6.1.0-56-amd64"));
  EXPECT_EQ(d.what, What::hold);
  EXPECT_EQ(d.kernel, "6.1.0-56-amd64");
  EXPECT_NE(d.reason.find("the newest kernel 6.1.0-57-amd64 has no module"), std::string::npos) << d.reason;
  // Already held there: nothing to do; every later apply plans nothing.
  EXPECT_EQ(decide_boot_guard(box({{"6.1.0-57-amd64", false}, {"6.1.0-56-amd64", true}}, "6.1.0-56-amd64", true)).what,
            What::nothing);
}

TEST(BootGuard, TheHoldIsLiftedOnceTheNewestHasTheModuleOrTheProfileAllows) {
  auto d = decide_boot_guard(box({{"6.1.0-57-amd64", true}, {"6.1.0-56-amd64", true}}, "6.1.0-56-amd64", true));
  EXPECT_EQ(d.what, What::release);
  EXPECT_NE(d.reason.find("6.1.0-57-amd64 has the module now"), std::string::npos);
  d = decide_boot_guard(box({{"6.1.0-57-amd64", false}, {"6.1.0-56-amd64", true}}, "6.1.0-56-amd64", true, true));
  EXPECT_EQ(d.what, What::release);
  EXPECT_EQ(
      decide_boot_guard(box({{"6.1.0-57-amd64", false}, {"6.1.0-56-amd64", true}}, "6.1.0-57-amd64", false, true)).what,
      What::nothing);
}

TEST(BootGuard, NothingToFallBackToIsUnsafeAndSaidSo) {
  const auto d = decide_boot_guard(box({{"6.1.0-57-amd64", false}, {"6.1.0-56-amd64", false}}, "6.1.0-57-amd64"));
  EXPECT_EQ(d.what, What::nothing);
  EXPECT_TRUE(d.unsafe);
  EXPECT_NE(d.reason.find("no installed kernel has one to fall back to"), std::string::npos);
  EXPECT_EQ(decide_boot_guard(box({{"6.1.0-57-amd64", true}}, "6.1.0-57-amd64")).what, What::nothing);
}

TEST(BootGuard, ReHoldsOnANewerKernelThatGotTheModule) {
  // Held on 55; 56 has the module now but the newest (57) still has not: hold on 56 instead.
  const auto d = decide_boot_guard(
      box({{"6.1.0-57-amd64", false}, {"6.1.0-56-amd64", true}, {"6.1.0-55-amd64", true}}, "6.1.0-55-amd64", true));
  EXPECT_EQ(d.what, What::hold);
  EXPECT_EQ(d.kernel, "6.1.0-56-amd64");
}

const char* kCfg = R"(set default="0"
menuentry 'Debian GNU/Linux' --class debian $menuentry_id_option 'gnulinux-simple-0b1c' {
	linux	/boot/vmlinuz-6.1.0-57-amd64 root=UUID=0b1c ro quiet
}
submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option 'gnulinux-advanced-0b1c' {
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-57-amd64' --class debian $menuentry_id_option 'gnulinux-6.1.0-57-amd64-advanced-0b1c' {
		linux	/boot/vmlinuz-6.1.0-57-amd64 root=UUID=0b1c ro quiet
	}
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-56-amd64 (recovery mode)' --class debian $menuentry_id_option 'gnulinux-6.1.0-56-amd64-recovery-0b1c' {
		linux	/boot/vmlinuz-6.1.0-56-amd64 root=UUID=0b1c ro single
	}
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-56-amd64' --class debian $menuentry_id_option 'gnulinux-6.1.0-56-amd64-advanced-0b1c' {
		linux	/boot/vmlinuz-6.1.0-56-amd64 root=UUID=0b1c ro quiet
	}
}
)";

TEST(GrubEntry, TheSubmenuPathOfTheNormalEntry) {
  EXPECT_EQ(grub_entry_for(kCfg, "6.1.0-56-amd64"), "gnulinux-advanced-0b1c>gnulinux-6.1.0-56-amd64-advanced-0b1c");
  EXPECT_EQ(grub_entry_for(kCfg, "6.1.0-57-amd64"), "gnulinux-simple-0b1c");
  EXPECT_FALSE(grub_entry_for(kCfg, "6.1.0-55-amd64"));
  // What GRUB boots with that saved_entry is the kernel asked for.
  std::string saved = kCfg;
  saved.replace(saved.find("set default=\"0\""), 15, "set default=\"${saved_entry}\"");
  const auto c =
      grub_default_kernel(saved, "saved_entry=gnulinux-advanced-0b1c>gnulinux-6.1.0-56-amd64-advanced-0b1c\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kernel, "6.1.0-56-amd64");
}

}  // namespace
}  // namespace p2pnode::lifecycle
