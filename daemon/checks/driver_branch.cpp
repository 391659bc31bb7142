// driver.branch: the driver branch the profile names (or the loaded one) can drive every GPU of
// the box; judged from the compiled-in architecture table before anything is downloaded or built.
#include <map>

#include "checks/check.hpp"
#include "core/hex.hpp"
#include "nvidia/gpu_arch.hpp"

namespace p2pnode::checks {

std::vector<Finding> check_driver_branch(const Profile& p, const Inventory& inv) {
  const bool from_profile = p.driver && !p.driver->version.empty();
  const std::string version = from_profile ? p.driver->version : inv.nvidia.loaded_version.value_or("");
  const auto gpus = inv.gpus();
  if (version.empty() || gpus.empty()) return {};
  Finding f = make_finding("driver.branch", "node", Severity::ok, "");
  std::map<std::string, std::vector<std::string>> by_arch;  // arch -> device ids seen
  nlohmann::json archs = nlohmann::json::object();
  for (const auto* g : gpus) {
    const auto* a = nvidia::find_gpu_arch(g->device);
    const std::string name = a ? std::string(a->name) : "unknown (10de:" + hex4_bare(g->device) + ")";
    auto& j = archs[name];
    j["gpus"].push_back(g->bdf);
    if (a) {
      j["first_branch"] = a->first_branch;
      j["p2p_reports"] = a->p2p;
    }
  }
  f.observed = {{"version", version}, {"branch", nvidia::driver_branch(version)},
                {"from", from_profile ? "profile driver.version" : "loaded module"}, {"architectures", archs}};
  const auto problems = nvidia::gpus_not_driven(inv, version);
  int need = 0;
  for (const auto* g : gpus)
    if (const auto* a = nvidia::find_gpu_arch(g->device); a && a->first_branch > need) need = a->first_branch;
  if (need) f.expected = {{"branch_at_least", need}};
  if (problems.empty()) {
    std::string names;
    for (const auto& [name, _] : archs.items()) names += (names.empty() ? "" : ", ") + name;
    f.summary = "driver " + version + " drives every GPU (" + names + ")";
    return {f};
  }
  f.severity = Severity::error;
  // Every GPU of one model says the same: the first line is the message, the count says how many.
  f.summary = problems.front().substr(problems.front().find(": ") + 2);
  if (problems.size() > 1) f.summary += " (" + std::to_string(problems.size()) + " GPUs)";
  f.observed["not_driven"] = problems;
  f.remediation = "Name a driver of branch " + std::to_string(need) + " or later in driver.version (with a P2P tree of "
                  "that branch in driver.kernel_module); p2pnode apply refuses to download or build " + version +
                  " for these GPUs.";
  return {f};
}

}  // namespace p2pnode::checks
