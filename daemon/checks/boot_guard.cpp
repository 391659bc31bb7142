// driver.boot_guard: the next boot does not land in a kernel without the module. A hold p2pnode
// put on GRUB is a warning that says why and how it is lifted; a next boot without the module that
// nothing holds back is driver.kernels' error (unless the profile allows it).
#include "lifecycle/boot_guard.hpp"
#include "checks/check.hpp"
#include "core/module_package.hpp"

namespace p2pnode::checks {

std::vector<Finding> check_boot_guard(const Profile& p, const Inventory& inv) {
  if (!p.driver || !p.driver->kernel_module || inv.kernels.kernels.empty()) { return {}; }
  using What = lifecycle::BootGuardDecision::What;
  const auto in = lifecycle::boot_guard_inputs(p, inv);
  const auto d = lifecycle::decide_boot_guard(in);
  const std::string want = module_package(*p.driver).dkms_id();
  const std::string& newest = inv.kernels.kernels.front().release;
  Finding f = make_finding("driver.boot_guard", "grub", Severity::ok, "");
  f.observed = {{"held", in.held},
                {"next_boot", in.next_boot},
                {"newest", newest},
                {"allow_boot_without_module", in.allow_boot_without_module}};
  f.expected = "the kernel GRUB boots next has " + want + ", or GRUB is held on one that has";
  // No kernel has the module (before the first build, or every build failed): driver.kernels
  // says so per kernel; there is nothing to hold GRUB on.
  if (d.unsafe) { return {}; }
  if (d.what == What::hold) {
    f.severity = Severity::warning;
    f.summary = "GRUB would boot " + newest + ", which has no " + want + ": `p2pnode apply` holds it on " + d.kernel;
    f.remediation =
        "Run `p2pnode apply` (the kernel hook and the daemon do), or build " + want + " for " + newest + ".";
  } else if (in.held && d.what == What::nothing) {
    f.severity = Severity::warning;
    f.summary = "GRUB is held on " + in.next_boot + " by p2pnode: the newest kernel " + newest + " has no " + want +
                " (see driver.kernels " + newest + ")";
    f.remediation = "Fix the module's build for " + newest +
                    " (driver.kernels says why it failed) and run `p2pnode apply`: "
                    "the hold is lifted once " +
                    newest + " has it. To boot " + newest +
                    " without P2P anyway, set "
                    "driver.allow_boot_without_module: true.";
  } else if (d.what == What::release) {
    f.severity = Severity::warning;
    f.summary = "GRUB is still held on " + in.next_boot + ": " + d.reason + " (`p2pnode apply` lifts the hold)";
    f.remediation = "Run `p2pnode apply`.";
  } else {
    f.summary = "the next boot kernel " + (in.next_boot.empty() ? newest : in.next_boot) + " has " + want +
                (in.allow_boot_without_module ? " (the profile allows booting without it)" : "");
    if (in.allow_boot_without_module && !in.kernels.front().has_module) {
      f.severity = Severity::warning;
      f.summary = "GRUB will boot " + newest + " without " + want +
                  ": the profile allows it (driver.allow_boot_without_module)";
    }
  }
  return {f};
}

}  // namespace p2pnode::checks
