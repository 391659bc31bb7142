#include <algorithm>
#include <map>
#include <set>
#include "core/hex.hpp"

#include "checks/check.hpp"
#include "nvidia/gpu_arch.hpp"
#include "nvidia/gpu_table.hpp"

namespace p2pnode::checks {

namespace {
std::string model_name(const PciDevice& d) {
  auto m = nvidia::find_gpu_model(d.device);
  return m ? std::string(m->name) + " (" + hex4_bare(d.vendor) + ":" + hex4_bare(d.device) + ")"
           : hex4_bare(d.vendor) + ":" + hex4_bare(d.device);
}
struct MixedModels {
  Severity severity = Severity::error;
  std::string why, remediation;
};
// Different GPU models in one box. One generation of P2P cards peers from aikitoria's 595.71.05-p2p
// (its README); across generations the module alone does not (patch-libcuda-p2p.py, which p2pnode
// does not apply): a warning, since same-generation pairs still peer. Cards outside the P2P table
// (data-center GPUs mixed with others) are not known to peer.
MixedModels judge_mixed_models(const Profile& p, const std::vector<const PciDevice*>& gpus) {
  std::set<std::string_view> generations;
  bool all_known = true;
  for (const auto* g : gpus) {
    const auto* c = nvidia::find_p2p_card(g->device);
    if (!c) {
      all_known = false;
    } else {
      generations.insert(c->generation);
    }
  }
  const std::string one_model =
      "Use one GPU model per box (move the odd cards to another node), or restrict P2P work to "
      "GPUs of one model (CUDA_VISIBLE_DEVICES).";
  if (!all_known) { return {Severity::error, "mixed GPU models: models not known to peer with each other", one_model}; }
  if (generations.size() > 1) {
    std::string names;
    for (const auto g : generations) { names += (names.empty() ? "" : " and ") + std::string(g); }
    return {Severity::warning,
            "mixed GPU generations (" + names +
                "): cards of one generation peer, across generations the patched "
                "module alone does not",
            "For P2P across generations, aikitoria's 610.57.04-p2p ships patch-libcuda-p2p.py, which patches libcuda "
            "(p2pnode does not apply it); or keep P2P work within one generation (CUDA_VISIBLE_DEVICES)."};
  }
  const std::string gen(*generations.begin());
  const bool p2p_tree = p.driver && p.driver->kernel_module && !p.driver->version.empty();
  if (p2p_tree && compare_driver_versions(p.driver->version, nvidia::kMixedModelsOneGeneration) >= 0) {
    return {Severity::ok,
            "different models of one generation (" + gen + ") peer from aikitoria's " +
                std::string(nvidia::kMixedModelsOneGeneration) + "-p2p on (its README)",
            ""};
  }
  return {Severity::error,
          "mixed GPU models of one generation (" + gen + "): they peer only from aikitoria's " +
              std::string(nvidia::kMixedModelsOneGeneration) +
              "-p2p on (its README); on 580.95.05-p2p they did not "
              "(aikitoria#13)" +
              (p2p_tree ? ", and the profile names " + p.driver->version : ""),
          "Name aikitoria's " + std::string(nvidia::kMixedModelsOneGeneration) +
              "-p2p or later in driver.version and driver.kernel_module; or use one GPU model per box, or restrict "
              "P2P work to GPUs of one model (CUDA_VISIBLE_DEVICES)."};
}
}  // namespace

std::vector<Finding> check_sysfs(const Profile&, const Inventory& inv) {
  std::vector<Finding> out;
  for (const auto& p : inv.problems) {
    Finding f = make_finding("sysfs.attributes", "node", Severity::error, p);
    f.observed = p;
    f.expected = "a readable sysfs tree";
    f.remediation = "Point --root at a system root (a directory with sys/ and proc/), or run on the node itself.";
    out.push_back(f);
  }
  for (const auto& d : inv.devices) {
    // Unrelated functions stay quiet, unless their identity itself is unreadable: a GPU whose
    // vendor or class file is garbage is classified "other" and would vanish without a word.
    const bool identity_unknown = std::any_of(d.problems.begin(), d.problems.end(), [](const std::string& p) {
      return p.rfind("vendor:", 0) == 0 || p.rfind("device:", 0) == 0 || p.rfind("class:", 0) == 0;
    });
    if (d.problems.empty() ||
        ((d.kind == DeviceKind::other || d.kind == DeviceKind::host_bridge) && !identity_unknown)) {
      continue;
    }
    Finding f = make_finding("sysfs.attributes", d.bdf, Severity::warning,
                             std::to_string(d.problems.size()) + " sysfs attribute(s) missing or malformed");
    f.observed = d.problems;
    f.expected = "every attribute present and well formed";
    f.remediation =
        "Re-read as root (config space beyond 64 bytes needs CAP_SYS_ADMIN); if the files are "
        "really missing or garbled, the kernel or the recording is broken: re-record the node.";
    out.push_back(f);
  }
  return out;
}

std::vector<Finding> check_gpu_models(const Profile& p, const Inventory& inv) {
  const auto gpus = inv.gpus();
  std::map<std::string, std::vector<std::string>> by_model;
  for (const auto* g : gpus) { by_model[model_name(*g)].push_back(g->bdf); }
  Finding f = make_finding("gpu.models", "node", Severity::ok, "");
  for (const auto& [model, bdfs] : by_model) { f.observed["models"][model] = bdfs; }
  f.observed["count"] = gpus.size();
  std::vector<std::string> problems;
  std::string mixed_ok;  // different models known to peer: said in the summary, not a problem
  if (by_model.size() > 1) {
    const auto mix = judge_mixed_models(p, gpus);
    f.observed["mixed_models"] = mix.why;
    if (mix.severity == Severity::ok) {
      mixed_ok = mix.why;
    } else if (mix.severity == Severity::warning) {
      f.severity = Severity::warning;
      f.summary = mix.why;
      f.remediation = mix.remediation;
    } else {
      problems.push_back(mix.why);
      f.remediation = mix.remediation;
    }
  }
  if (p.match.gpus && !p.match.gpus->devices.empty()) {
    std::vector<std::string> ids;
    for (auto id : p.match.gpus->devices) { ids.push_back("0x" + hex4_bare(id)); }
    f.expected["device_ids"] = ids;
    // A profile forced with --profile was never matched against the box: its device ids are judged here.
    std::map<std::string, int> others;
    for (const auto* g : gpus) {
      if (std::find(p.match.gpus->devices.begin(), p.match.gpus->devices.end(), g->device) ==
          p.match.gpus->devices.end()) {
        others[model_name(*g)]++;
      }
    }
    for (const auto& [model, n] : others) {
      std::string list;
      for (const auto& id : ids) { list += (list.empty() ? "" : ", ") + id; }
      problems.push_back(std::to_string(n) + " × " + model + " not among the profile's device ids (" + list + ")");
      if (!f.remediation.empty()) { f.remediation += " "; }
      f.remediation +=
          "This profile is for other GPUs: use the profile for this box, or add its device id to match.gpus.devices.";
    }
  }
  if (p.match.gpus && p.match.gpus->count) {
    f.expected["count"] = *p.match.gpus->count;
    if (static_cast<int>(gpus.size()) != *p.match.gpus->count) {
      problems.push_back("found " + std::to_string(gpus.size()) + " GPUs, the profile expects " +
                         std::to_string(*p.match.gpus->count));
      if (!f.remediation.empty()) { f.remediation += " "; }
      f.remediation +=
          "Check that every card is seated and powered (a missing GPU often fell off the bus: "
          "dmesg | grep -i -e NVRM -e 'pcie bus error'), or fix match.gpus.count in the profile.";
    }
  }
  if (gpus.empty() && !(p.match.gpus && p.match.gpus->count == 0)) {
    problems.push_back("no NVIDIA GPU found on the PCI bus");
    f.remediation = "Check that the GPUs are seated and visible (lspci -d 10de:).";
  }
  if (problems.empty()) {
    if (f.severity == Severity::warning) { return {f}; }
    if (by_model.size() > 1) {
      std::string list;
      for (const auto& [model, bdfs] : by_model) {
        list += (list.empty() ? "" : ", ") + std::to_string(bdfs.size()) + " × " + model;
      }
      f.summary = list + ": " + mixed_ok;
    } else {
      f.summary = std::to_string(gpus.size()) + " × " + (by_model.empty() ? "GPU" : by_model.begin()->first);
    }
    return {f};
  }
  f.severity = Severity::error;
  f.summary = problems.front();
  for (std::size_t i = 1; i < problems.size(); ++i) { f.summary += "; " + problems[i]; }
  return {f};
}

}  // namespace p2pnode::checks
