// driver.branch: the driver branch the profile names (or the loaded one) can drive every GPU of
// the box; judged from the compiled-in architecture table before anything is downloaded or built.
#include <map>

#include "checks/check.hpp"
#include "core/hex.hpp"
#include "nvidia/gpu_arch.hpp"

namespace p2pnode::checks {

namespace {
// driver.branch, subject p2p: the profile's P2P tree against the branch table (nvidia/gpu_arch.hpp).
Finding judge_p2p_branch(const std::string& version, const Inventory& inv) {
  Finding f = make_finding("driver.branch", "p2p", Severity::ok, "");
  nlohmann::json cards = nlohmann::json::object();
  std::string need;
  bool has_5090 = false;
  for (const auto* g : inv.gpus()) {
    if (const auto* c = nvidia::find_p2p_card(g->device)) {
      cards[std::string(c->name)]["gpus"].push_back(g->bdf);
      cards[std::string(c->name)]["first_p2p"] = c->first_p2p;
      cards[std::string(c->name)]["source"] = c->source;
      has_5090 = has_5090 || c->first_p2p == "575.64.05";
    }
  }
  f.observed = {{"version", version}, {"cards", cards}};
  nlohmann::json first = nlohmann::json::object();
  for (const auto& [name, c] : cards.items()) { first[name] = c["first_p2p"]; }
  f.expected = {{"p2p_from", first}};
  const auto missing = nvidia::gpus_without_p2p(inv, version);
  if (cards.empty()) {
    f.summary = "no GPU of the box is in the P2P branch table (data-center GPUs peer without a patched branch)";
    return f;
  }
  if (missing.empty()) {
    std::string names;
    for (const auto& [name, _] : cards.items()) { names += (names.empty() ? "" : ", ") + name; }
    f.summary = "the P2P branch of " + version + " brings P2P to every GPU (" + names + ")";
    if (has_5090) { f.observed["display_attached_5090"] = nvidia::kDisplayAttached5090; }
    return f;
  }
  f.severity = Severity::error;
  f.summary = missing.front().substr(missing.front().find(": ") + 2);
  if (missing.size() > 1) { f.summary += " (" + std::to_string(missing.size()) + " GPUs)"; }
  f.observed["without_p2p"] = missing;
  f.remediation =
      "Name a P2P tree of that branch or later in driver.version and driver.kernel_module (for Blackwell "
      "cards, aikitoria's open-gpu-kernel-modules branch 595.71.05-p2p or 610.57.04-p2p); p2pnode apply "
      "refuses to download or build " +
      version + " for these GPUs.";
  return f;
}
}  // namespace

std::vector<Finding> check_driver_branch(const Profile& p, const Inventory& inv) {
  const bool from_profile = p.driver && !p.driver->version.empty();
  const std::string version = from_profile ? p.driver->version : inv.nvidia.loaded_version.value_or("");
  const auto gpus = inv.gpus();
  if (version.empty() || gpus.empty()) { return {}; }
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
  f.observed = {{"version", version},
                {"branch", driver_branch_of(version)},
                {"from", from_profile ? "profile driver.version" : "loaded module"},
                {"architectures", archs}};
  const auto problems = nvidia::gpus_not_driven(inv, version);
  int need = 0;
  for (const auto* g : gpus) {
    if (const auto* a = nvidia::find_gpu_arch(g->device); a && a->first_branch > need) { need = a->first_branch; }
  }
  if (need) { f.expected = {{"branch_at_least", need}}; }
  if (problems.empty()) {
    std::string names;
    for (const auto& [name, _] : archs.items()) { names += (names.empty() ? "" : ", ") + name; }
    f.summary = "driver " + version + " drives every GPU (" + names + ")";
    std::vector<Finding> out{f};
    if (from_profile && p.driver->kernel_module) { out.push_back(judge_p2p_branch(version, inv)); }
    if (from_profile && p.driver->kernel_module) {
      if (const auto mixed = nvidia::mixed_generations(inv)) {
        Finding m = make_finding("driver.branch", "generations", Severity::warning, *mixed);
        m.remediation =
            "Keep one GPU generation per box, or add the libcuda patch of aikitoria's fork for mixed "
            "generations to the userspace driver (p2pnode does not apply it).";
        out.push_back(m);
      }
    }
    return out;
  }
  f.severity = Severity::error;
  // Every GPU of one model says the same: the first line is the message, the count says how many.
  f.summary = problems.front().substr(problems.front().find(": ") + 2);
  if (problems.size() > 1) { f.summary += " (" + std::to_string(problems.size()) + " GPUs)"; }
  f.observed["not_driven"] = problems;
  f.remediation = "Name a driver of branch " + std::to_string(need) +
                  " or later in driver.version (with a P2P tree of "
                  "that branch in driver.kernel_module); p2pnode apply refuses to download or build " +
                  version + " for these GPUs.";
  return {f};
}

}  // namespace p2pnode::checks
