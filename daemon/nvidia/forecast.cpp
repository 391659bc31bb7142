#include "nvidia/forecast.hpp"

#include <algorithm>

#include "core/module_package.hpp"
#include "nvidia/breakage.hpp"

namespace p2pnode::nvidia {

std::vector<std::string> builtin_patches_of(const ModuleSource& km) {
  std::vector<std::string> out;
  for (const auto& a : km.patches) {
    if (a.builtin) { out.push_back(*a.builtin); }
  }
  return out;
}

const std::map<std::string, bool>* staged_source_tests(const Inventory& inv, const DriverSpec& d) {
  if (!d.kernel_module) { return nullptr; }
  const auto it = inv.nvidia.source_tests.find(module_package(d).src_dir());
  return it == inv.nvidia.source_tests.end() ? nullptr : &it->second;
}

TreeSource tree_source_tests(const Inventory& inv, const DriverSpec& d) {
  if (const auto* staged = staged_source_tests(inv, d)) { return {staged, module_package(d).src_dir()}; }
  if (!d.kernel_module || inv.nvidia.profile_tree.empty()) { return {}; }
  const auto it = inv.nvidia.source_tests.find(inv.nvidia.profile_tree);
  if (it == inv.nvidia.source_tests.end()) { return {}; }
  return {&it->second, inv.nvidia.profile_tree};
}

std::vector<const Breakage*> build_entries_on_kernel(std::string_view k,
                                                     const std::map<std::string, bool>& header_tests) {
  std::vector<const Breakage*> out;
  for (const auto& b : builtin_breakages()) {
    if (b.stage != BreakageStage::build || !kernel_in_range(b, k)) { continue; }
    if (b.headers) {
      const auto it = header_tests.find(b.id);
      if (it == header_tests.end() || !it->second) { continue; }
    }
    out.push_back(&b);
  }
  return out;
}

std::string no_release_past(const std::vector<const Breakage*>& stops, std::string_view k,
                            const std::map<std::string, bool>& header_tests) {
  std::string unfixed;
  for (const auto* b : stops) {
    if (b->fixed_in.empty()) {
      unfixed += std::string(unfixed.empty() ? "" : ", ") + b->id + " (known up to " + newest_affected(*b) + ")";
    }
  }
  std::string out = "No NVIDIA release is known to build on " + std::string(k) + " as released" +
                    (unfixed.empty() ? std::string(".") : ": no release is recorded as fixing " + unfixed + ".");
  return out + newest_with_builtins(k, header_tests);
}

std::map<std::string, bool> read_source_tests(const sys::SysRoot& root, const std::string& tree) {
  std::map<std::string, bool> out;
  for (const auto& b : builtin_breakages()) {
    if (!b.source) { continue; }
    const auto text = root.read_text(sys::join(tree, b.source->file), 16 << 20);
    out[b.id] = text ? source_affected(b, std::string_view(*text)) : source_affected(b, std::nullopt);
  }
  return out;
}

std::string newest_with_builtins(std::string_view kernel_release, const std::map<std::string, bool>& header_tests) {
  const std::string newest(kNewestReleaseChecked);
  std::vector<std::string> names;
  for (const auto& pb : predict_breakages(builtin_breakages(), newest, kernel_release, header_tests, {})) {
    if (pb.breakage->stage != BreakageStage::build) { continue; }
    if (!pb.breakage->fix_builtin) { return {}; }
    names.push_back(*pb.breakage->fix_builtin);
  }
  if (names.empty()) { return {}; }
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) { list += (i ? ", " : "") + names[i]; }
  return " " + newest + " with the builtin patches " + list +
         " builds there (a P2P tree as NVIDIA's release plus a ported P2P patch: docs/drivers-and-kernels.md).";
}

std::string describe_stops(const std::vector<const PredictedBreakage*>& stops, std::string_view v, std::string_view k,
                           const std::map<std::string, bool>& header_tests) {
  if (stops.empty()) { return {}; }
  std::string out = stops.front()->describe(v, k) + " Fix: " + stops.front()->breakage->remediation;
  std::vector<const Breakage*> all;
  for (const auto* s : stops) { all.push_back(s->breakage); }
  if (stops.size() > 1) {
    out += " (then also";
    for (std::size_t i = 1; i < stops.size(); ++i) {
      out += std::string(i > 1 ? "," : "") + " " + stops[i]->breakage->id;
    }
    out += ")";
  }
  const auto on_kernel = build_entries_on_kernel(k, header_tests);
  if (const auto r = first_release_past(on_kernel)) {
    out += "; the first NVIDIA release known to build on " + std::string(k) + ": " + *r;
  } else if (std::any_of(all.begin(), all.end(), [](const Breakage* b) { return !b->fix_builtin; })) {
    out += ". " + no_release_past(on_kernel, k, header_tests);
  }
  return out;
}

std::vector<std::string> build_stops(const Inventory& inv, const DriverSpec& d,
                                     const std::map<std::string, bool>* source_tests) {
  std::vector<std::string> out;
  if (!d.kernel_module) { return out; }
  if (!source_tests) { source_tests = staged_source_tests(inv, d); }
  const auto builtins = builtin_patches_of(*d.kernel_module);
  for (const auto& k : inv.kernels.kernels) {
    if (!k.headers) { continue; }
    bool installed = false;
    for (const auto& m : k.dkms) {
      if (m.package == d.kernel_module->name && m.version == d.version && m.installed) { installed = true; }
    }
    if (installed) { continue; }
    const auto predicted =
        predict_breakages(builtin_breakages(), d.version, k.release, k.header_tests, builtins, source_tests);
    std::vector<const PredictedBreakage*> stops;
    for (const auto& p : predicted) {
      if (!p.fixed && p.breakage->stage == BreakageStage::build) { stops.push_back(&p); }
    }
    if (!stops.empty()) {
      out.push_back(k.release + ": " + describe_stops(stops, d.version, k.release, k.header_tests));
    }
    if (!k.compiler_command.empty() && !k.compiler_present) {
      out.push_back(k.release + ": its headers were made with " + k.compiler_text + " and " + k.compiler_command +
                    " is not installed" +
                    (k.compiler_package.empty() ? "" : " (apt-get install " + k.compiler_package + ")"));
    }
  }
  return out;
}

}  // namespace p2pnode::nvidia
