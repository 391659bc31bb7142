#include "nvidia/forecast.hpp"

#include "nvidia/breakage.hpp"

namespace p2pnode::nvidia {

std::vector<std::string> builtin_patches_of(const ModuleSource& km) {
  std::vector<std::string> out;
  for (const auto& a : km.patches)
    if (a.builtin) out.push_back(*a.builtin);
  return out;
}

std::vector<std::string> build_stops(const Inventory& inv, const DriverSpec& d) {
  std::vector<std::string> out;
  if (!d.kernel_module) return out;
  const auto builtins = builtin_patches_of(*d.kernel_module);
  for (const auto& k : inv.kernels.kernels) {
    if (!k.headers) continue;
    bool installed = false;
    for (const auto& m : k.dkms)
      if (m.package == d.kernel_module->name && m.version == d.version && m.installed) installed = true;
    if (installed) continue;
    for (const auto& p : predict_breakages(builtin_breakages(), d.version, k.release, k.header_tests, builtins))
      if (!p.fixed && p.breakage->stage == BreakageStage::build)
        out.push_back(k.release + ": " + p.describe(d.version, k.release) + " Fix: " + p.breakage->remediation);
  }
  return out;
}

}  // namespace p2pnode::nvidia
