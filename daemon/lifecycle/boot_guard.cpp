#include "lifecycle/boot_guard.hpp"

#include <algorithm>

#include "lifecycle/gdrdrv.hpp"
#include "secureboot/verdict.hpp"

namespace p2pnode::lifecycle {

BootGuardDecision decide_boot_guard(const BootGuardInputs& in) {
  using What = BootGuardDecision::What;
  BootGuardDecision d;
  const auto good =
      std::find_if(in.kernels.begin(), in.kernels.end(), [](const KernelModuleState& s) { return s.has_module; });
  const bool newest_ok = !in.kernels.empty() && in.kernels.front().has_module;
  if (in.allow_boot_without_module) {
    if (in.held) {
      d = {What::release, "",
           "the profile allows booting a kernel without the module (driver.allow_boot_without_module)"};
    }
    return d;
  }
  if (newest_ok) {
    if (in.held) {
      d = {What::release, "",
           "the newest kernel " + in.kernels.front().release + " has the module now: GRUB may boot it again"};
    }
    return d;
  }
  if (in.kernels.empty()) { return d; }
  // Debian's update-grub makes the newest kernel the default: it must have the module, or GRUB
  // is held on one that has.
  const std::string& newest = in.kernels.front().release;
  const auto& front = in.kernels.front();
  std::string which;  // the packages it lacks, where the inputs name them
  for (const auto& m : front.missing) { which += (which.empty() ? " (" : ", ") + m; }
  if (!which.empty()) { which += ")"; }
  const std::string lacks =
      front.unsigned_under_secure_boot
          ? " has the module unsigned and Secure Boot enforces signatures (the kernel would refuse it)"
          : " has no module" + which + " (its build failed or its headers are missing)";
  if (good == in.kernels.end()) {
    d.unsafe = true;
    d.reason = "the newest kernel " + newest + lacks + " and no installed kernel has one to fall back to";
    return d;
  }
  if (in.held && in.next_boot == good->release) {
    return d;  // already held there
  }
  d = {What::hold, good->release,
       "the newest kernel " + newest + lacks + ": hold GRUB on " + good->release +
           ", the newest kernel that has it, until the module is built"};
  return d;
}

BootGuardInputs boot_guard_inputs(const Profile& p, const Inventory& inv) {
  BootGuardInputs in;
  if (!p.driver || !p.driver->kernel_module) { return in; }
  std::vector<std::pair<std::string, std::string>> wanted = {{p.driver->kernel_module->name, p.driver->version}};
  if (p.gdrcopy) { wanted.emplace_back(kGdrdrvPackage, p.gdrcopy->version); }
  const bool enforced = secureboot::decide_signing(inv.secure_boot).trust != secureboot::Trust::not_enforced;
  for (const auto& k : inv.kernels.kernels) {
    KernelModuleState s{k.release, true, {}};
    for (const auto& [pkg, ver] : wanted) {
      bool has = false;
      for (const auto& d : k.dkms) {
        if (d.package != pkg || d.version != ver || !d.installed) { continue; }
        if (enforced && d.signed_modules == false) {
          s.unsigned_under_secure_boot = true;
        } else {
          has = true;
        }
      }
      if (!has) { s.missing.push_back(pkg + "/" + ver); }
      s.has_module = s.has_module && has;
    }
    in.kernels.push_back(s);
  }
  in.next_boot = inv.kernels.next_boot;
  in.held = inv.kernels.boot_guard_held;
  in.allow_boot_without_module = p.driver->allow_boot_without_module;
  return in;
}

}  // namespace p2pnode::lifecycle
