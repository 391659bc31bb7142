#include "nvidia/forecast.hpp"

#include "nvidia/breakage.hpp"

namespace p2pnode::nvidia {

std::vector<std::string> builtin_patches_of(const ModuleSource& km) {
  std::vector<std::string> out;
  for (const auto& a : km.patches)
    if (a.builtin) out.push_back(*a.builtin);
  return out;
}

const std::map<std::string, bool>* staged_source_tests(const Inventory& inv, const DriverSpec& d) {
  if (!d.kernel_module) return nullptr;
  const auto it = inv.nvidia.source_tests.find("/usr/src/" + d.kernel_module->name + "-" + d.version);
  return it == inv.nvidia.source_tests.end() ? nullptr : &it->second;
}

std::map<std::string, bool> read_source_tests(const sys::SysRoot& root, const std::string& tree) {
  std::map<std::string, bool> out;
  for (const auto& b : builtin_breakages()) {
    if (!b.source) continue;
    const auto text = root.read_text(sys::join(tree, b.source->file), 16 << 20);
    out[b.id] = text ? source_affected(b, std::string_view(*text)) : source_affected(b, std::nullopt);
  }
  return out;
}

std::vector<std::string> build_stops(const Inventory& inv, const DriverSpec& d, const std::map<std::string, bool>* source_tests) {
  std::vector<std::string> out;
  if (!d.kernel_module) return out;
  if (!source_tests) source_tests = staged_source_tests(inv, d);
  const auto builtins = builtin_patches_of(*d.kernel_module);
  for (const auto& k : inv.kernels.kernels) {
    if (!k.headers) continue;
    bool installed = false;
    for (const auto& m : k.dkms)
      if (m.package == d.kernel_module->name && m.version == d.version && m.installed) installed = true;
    if (installed) continue;
    for (const auto& p : predict_breakages(builtin_breakages(), d.version, k.release, k.header_tests, builtins, source_tests))
      if (!p.fixed && p.breakage->stage == BreakageStage::build)
        out.push_back(k.release + ": " + p.describe(d.version, k.release) + " Fix: " + p.breakage->remediation);
  }
  return out;
}

}  // namespace p2pnode::nvidia
