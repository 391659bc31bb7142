#pragma once
// Never boot into a kernel without the module: when the kernel GRUB starts next lacks the
// profile's DKMS module (its build failed, or its headers have not arrived) and an older installed
// kernel has it, GRUB's default is held on that one (GRUB_DEFAULT=saved from a drop-in in
// /etc/default/grub.d, saved_entry through grub-set-default) until the module is built for the
// newest kernel; then the hold is lifted. decide_boot_guard() is pure.
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"

namespace p2pnode::lifecycle {

inline constexpr const char* kBootGuardDropIn = "/etc/default/grub.d/p2pnode-boot-guard.cfg";

struct KernelModuleState {
  std::string release;
  // Every DKMS package the profile builds (driver.kernel_module's, and gdrdrv with a gdrcopy
  // section) installed for it: a kernel that lacks either is a kernel without the module.
  bool has_module = false;
  std::vector<std::string> missing;  // the packages it lacks, "gdrdrv/2.6"
  // Installed but unsigned where Secure Boot enforces signatures: the kernel would refuse it, so
  // it counts as missing (has_module false).
  bool unsigned_under_secure_boot = false;
};

struct BootGuardInputs {
  std::vector<KernelModuleState> kernels;  // installed, newest first
  std::string next_boot;                   // what GRUB starts now (lifecycle::next_boot_kernel)
  bool held = false;                       // p2pnode's drop-in is in place
  bool allow_boot_without_module = false;  // the profile's driver.allow_boot_without_module
};

struct BootGuardDecision {
  enum class What { nothing, hold, release } what = What::nothing;
  std::string kernel;   // hold: the kernel to boot (the newest with the module)
  std::string reason;   // why, for the plan, the step and the finding
  bool unsafe = false;  // the next boot kernel lacks the module and nothing can be done about it
};

BootGuardDecision decide_boot_guard(const BootGuardInputs& in);

// The inputs for the profile's modules (driver.kernel_module's package at driver.version, and
// gdrdrv at gdrcopy.version) on this box: which installed kernels have them, what GRUB starts,
// whether the hold is in place.
BootGuardInputs boot_guard_inputs(const Profile& p, const Inventory& inv);

}  // namespace p2pnode::lifecycle
