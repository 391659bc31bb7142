// The driver's own word, as the agent read it through NVML (agent schema 2): the recovery action
// (health.recovery), the GPU's own PCIe counters and link (health.gpu_pcie), the memory state that
// decides whether bytes can be trusted (health.memory) and the P2P status of every ordered pair
// (health.p2p_status). Part of HealthMonitor (monitor.hpp); pure like the rest of it.
#include <algorithm>

#include "health/monitor.hpp"
#include "health/thresholds.hpp"

namespace p2pnode::health {

namespace {
using json = nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

std::vector<std::string> pairs_of(const PathIndex& paths, const std::string& gpu) {
  const auto it = paths.pairs.find(gpu);
  return it == paths.pairs.end() ? std::vector<std::string>{}
                                 : std::vector<std::string>(it->second.begin(), it->second.end());
}

std::string pairs_text(const std::vector<std::string>& pairs) {
  if (pairs.empty()) { return ""; }
  std::string out = "; its P2P pairs: ";
  for (std::size_t i = 0; i < pairs.size() && i < 4; ++i) { out += (i ? ", " : "") + pairs[i]; }
  return out + (pairs.size() > 4 ? ", …" : "");
}

struct ActionInfo {
  const char* name;
  const char* words;  // the driver's words (nvidia-smi -q, "GPU Recovery Action")
  Severity severity;
  bool drain_p2p;  // peer traffic must stop: the node is not P2P-ready
  const char* remediation;
};
const ActionInfo* action_info(const std::string& a) {
  static const ActionInfo t[] = {
      {"gpu_reset", "GPU Reset", Severity::error, false,
       "reset the GPU when no job uses it (nvidia-smi -r -i <gpu>); the driver clears the action after the reset"},
      {"node_reboot", "Node Reboot", Severity::error, false, "drain the node and reboot it"},
      {"drain_p2p", "Drain P2P", Severity::error, true,
       "stop peer traffic to and from this GPU (drain the jobs that use P2P on it); the driver clears the action once "
       "P2P traffic stopped"},
      {"drain_and_reset", "Drain P2P and Reset", Severity::error, true,
       "stop peer traffic to and from this GPU, then reset it (nvidia-smi -r -i <gpu>)"},
      {"recover_imex_domain", "Recover IMEX Domain", Severity::warning, false,
       "recover the IMEX domain this GPU belongs to (multi-node NVLink); single-node P2P is not affected"},
  };
  for (const auto& i : t) {
    if (a == i.name) { return &i; }
  }
  return nullptr;
}
// What the driver verdicts on one GPU read and add to: the sample, the monitor's counters and findings.
struct DriverVerdictPass {
  const HealthSample& sample;
  CounterWindow& window;
  const HealthLimits& limits;
  std::vector<Finding>& findings;
};

// The GPU's entry in the health document: what the driver said, as read.
json driver_gpu_json(const AgentGpuReading& g, const std::vector<std::string>& pairs) {
  return {{"gpu", g.gpu},
          {"recovery_action", g.recovery_action.empty() ? json(nullptr) : json(g.recovery_action)},
          {"recovery_problem", g.recovery_problem.empty() ? json(nullptr) : json(g.recovery_problem)},
          {"pcie",
           {{"replay", opt(g.pcie.replay)},
            {"replay_rollover", opt(g.pcie.replay_rollover)},
            {"gen", opt(g.pcie.gen)},
            {"max_gen", opt(g.pcie.max_gen)},
            {"width", opt(g.pcie.width)},
            {"max_width", opt(g.pcie.max_width)}}},
          {"memory",
           {{"remapped_correctable", opt(g.memory.remapped_correctable)},
            {"remapped_uncorrectable", opt(g.memory.remapped_uncorrectable)},
            {"remap_pending", opt(g.memory.remap_pending)},
            {"remap_failure", opt(g.memory.remap_failure)},
            {"volatile_uncorrected_ecc", opt(g.memory.volatile_uncorrected)}}},
          {"pairs", pairs}};
}

// The recovery action: the state that stays after the Xid that caused it.
void driver_judge_recovery(const AgentGpuReading& g, const std::vector<std::string>& pairs,
                           std::vector<Finding>& findings) {
  if (g.recovery_action.empty() || g.recovery_action == "none") { return; }
  const ActionInfo* info = action_info(g.recovery_action);
  Finding f;
  f.check = "health.recovery";
  f.subject = g.gpu;
  f.severity = info ? info->severity : Severity::warning;
  const std::string words = info ? info->words : g.recovery_action;
  f.summary = "the driver's recovery action for GPU " + g.gpu + " is \"" + words + "\"" +
              (info && info->drain_p2p ? ": peer traffic to and from it must stop, the node is not P2P-ready" : "") +
              pairs_text(pairs);
  f.observed = {{"recovery_action", g.recovery_action}, {"p2p_ready", !(info && info->drain_p2p)}, {"pairs", pairs}};
  f.expected = {{"recovery_action", "none"}};
  f.remediation = std::string(info ? info->remediation : "see NVIDIA's documentation of the GPU recovery action") +
                  "; `nvidia-smi -q -i " + g.gpu + "` shows it under \"GPU Recovery Action\"";
  findings.push_back(std::move(f));
}

// The GPU's own PCIe replay counter (and its rollovers), where sysfs may have no AER files.
void driver_judge_gpu_pcie(const DriverVerdictPass& pass, const AgentGpuReading& g, const json& gj,
                           const std::vector<std::string>& pairs,
                           const std::map<std::string, const DeviceReading*>& sysfs) {
  CounterWindow& window = pass.window;
  const HealthLimits& limits = pass.limits;
  const std::string base = "gpupcie/" + g.gpu + "/";
  // Healthy GPUs count a few replays (10, 2 and 13 on three healthy H100s): judged by rate.
  std::map<std::string, std::uint64_t> rose;
  std::optional<double> replay_rate;
  if (g.pcie.replay) {
    window.record(base + "replay", pass.sample.mono_s, *g.pcie.replay);
    const auto r = window.rise(base + "replay");
    const double span = window.span(base + "replay");
    replay_rate = rate_per_second(r, span);
    if (over_limit(limits.pcie_replay, r, span)) { rose["replays"] = r; }
  }
  if (g.pcie.replay_rollover) {
    window.record(base + "rollover", pass.sample.mono_s, *g.pcie.replay_rollover);
    const auto r = window.rise(base + "rollover");
    if (over_limit(limits.pcie_rollover, r, window.span(base + "rollover"))) { rose["replay counter rollovers"] = r; }
  }
  std::vector<std::string> link;
  if (g.pcie.width && g.pcie.max_width && *g.pcie.width<*g.pcie.max_width&& * g.pcie.width> 0) {
    link.push_back("width x" + std::to_string(*g.pcie.width) + " of x" + std::to_string(*g.pcie.max_width));
  }
  // (A GPU lowers its link generation when idle: a lower generation alone is not a finding.)
  if (rose.empty() && link.empty()) { return; }
  const auto it = sysfs.find(g.gpu);
  const bool aer_files = it != sysfs.end() && !it->second->aer.empty();
  std::uint64_t aer_correctable = 0;
  if (aer_files) {
    if (const auto c = it->second->aer.find("correctable"); c != it->second->aer.end()) {
      aer_correctable = window.rise("aer/" + g.gpu + "/correctable");
    }
  }
  Finding f;
  f.check = "health.gpu_pcie";
  f.subject = g.gpu;
  f.severity = Severity::warning;
  f.summary = "GPU " + g.gpu + "'s own PCIe counters (NVML): " +
              (rose.empty() ? link.front()
                            : describe_rises(rose) + " in the last " + window_text(window.window()) +
                                  (rose.count("replays") ? ", " + rate_text(*replay_rate) + " (limit " +
                                                               limit_text(limits.pcie_replay) + ")"
                                                         : "") +
                                  (link.empty() ? "" : "; link " + link.front())) +
              (aer_files ? "; sysfs AER saw correctable +" + std::to_string(aer_correctable) + " in the same window"
                         : "; this box has no AER files for it, NVML is the only source") +
              pairs_text(pairs);
  f.observed = {{"source", "nvml"},
                {"rise", rose},
                {"replay_rate_per_s", opt(replay_rate)},
                {"pcie", gj.at("pcie")},
                {"aer_files", aer_files},
                {"aer_correctable_rise", aer_files ? json(aer_correctable) : json(nullptr)},
                {"pairs", pairs}};
  f.expected = {{"replay_rate_per_s_below", limits.pcie_replay.per_second},
                {"limit_source", limits.pcie_replay.source},
                {"rollover_rise", 0},
                {"width", opt(g.pcie.max_width)},
                {"window_s", window.window()}};
  f.remediation =
      "Replays are link-level retransmissions: a steady rise costs bandwidth and points at the slot, riser, "
      "retimer or cable of this GPU; reseat it and watch `nvidia-smi -q -i " +
      g.gpu + "` (Replays Since Reset). A narrower link caps every P2P transfer through it";
  pass.findings.push_back(std::move(f));
}

// Memory: a failed remap or uncorrected errors mean bytes cannot be trusted; a pending remap
// waits for a reset.
void driver_judge_memory(const DriverVerdictPass& pass, const AgentGpuReading& g, const json& gj,
                         const std::vector<std::string>& pairs) {
  CounterWindow& window = pass.window;
  std::optional<std::uint64_t> ecc_rise;
  if (g.memory.volatile_uncorrected) {
    window.record("memory/" + g.gpu + "/uncorrected", pass.sample.mono_s, *g.memory.volatile_uncorrected);
    ecc_rise = window.rise("memory/" + g.gpu + "/uncorrected");
  }
  std::vector<std::string> mem;
  Severity sev = Severity::warning;
  if (ecc_rise && *ecc_rise) {
    mem.push_back("uncorrected ECC errors +" + std::to_string(*ecc_rise) + " in the last " +
                  window_text(window.window()));
    sev = Severity::error;
  }
  if (g.memory.remap_failure && *g.memory.remap_failure) {
    mem.push_back("a row remapping failed");
    sev = Severity::error;
  }
  if (g.memory.remap_pending && *g.memory.remap_pending) {
    mem.push_back("a row remap is pending until the GPU is reset");
  }
  if (mem.empty()) { return; }
  Finding f;
  f.check = "health.memory";
  f.subject = g.gpu;
  f.severity = sev;
  f.summary = "GPU " + g.gpu + " memory: " + mem.front() + (mem.size() > 1 ? "; " + mem[1] : "") +
              (mem.size() > 2 ? "; " + mem[2] : "") +
              (sev == Severity::error ? ": bytes it holds or copies cannot be trusted" : "") + pairs_text(pairs);
  f.observed = {{"memory", gj.at("memory")}, {"uncorrected_rise", opt(ecc_rise)}, {"pairs", pairs}};
  f.expected = {{"uncorrected_rise", 0}, {"remap_failure", false}, {"remap_pending", false}};
  f.remediation = sev == Severity::error
                      ? "Drain the GPU and reset it; replace it if a remap failed or uncorrected errors return"
                      : "Reset the GPU when it is idle, so that the remap takes effect";
  pass.findings.push_back(std::move(f));
}

// The driver's P2P status of one ordered pair: a capability that was OK (in any pass, `seen_ok`)
// and is not any more.
void driver_judge_p2p_status(const P2pStatusReading& p, std::set<std::string>& seen_ok, json& p2p_status,
                             std::vector<Finding>& findings) {
  json pj = {{"gpu", p.gpu}, {"peer_gpu", p.peer}};
  std::vector<std::string> lost;
  for (const auto& [cap, st] : p.caps) {
    pj[cap] = st ? json(*st) : json(nullptr);
    if (!st) { continue; }
    const std::string key = p.gpu + ">" + p.peer + "/" + cap;
    if (*st == "ok") {
      seen_ok.insert(key);
    } else if (seen_ok.count(key)) {
      lost.push_back(cap + " " + *st);
    }
  }
  p2p_status.push_back(pj);
  if (lost.empty()) { return; }
  Finding f;
  f.check = "health.p2p_status";
  f.subject = p.gpu;
  f.severity = Severity::error;
  std::string what;
  for (std::size_t i = 0; i < lost.size(); ++i) { what += (i ? ", " : "") + lost[i]; }
  f.summary = "the driver no longer allows P2P from GPU " + p.gpu + " to " + p.peer + ": " + what +
              " (it was OK in an earlier pass)";
  f.observed = {{"peer_gpu", p.peer}, {"status", pj}, {"lost", lost}};
  f.expected = {{"status", "ok"}};
  f.remediation =
      "P2P between these GPUs now falls back to copies through host memory, or fails: check the kernel log "
      "for an Xid or AER report on either GPU, `nvidia-smi topo -p2p rw`, the IOMMU and ACS settings "
      "(`p2pnode check`), and run `p2pnode selftest run`";
  findings.push_back(std::move(f));
}
}  // namespace

bool recovery_blocks_p2p(const std::string& action) {
  const ActionInfo* i = action_info(action);
  return i && i->drain_p2p;
}

void HealthMonitor::assess_driver(const HealthSample& s, const PathIndex& paths) {
  gpus_ = json::array();
  p2p_status_ = json::array();
  if (!s.agent.read || !s.agent.driver_state) { return; }
  std::map<std::string, const DeviceReading*> sysfs;
  for (const auto& d : s.devices) { sysfs[d.bdf] = &d; }
  const DriverVerdictPass pass{s, window_, limits_, findings_};
  for (const auto& g : s.agent.gpus) {
    const auto pairs = pairs_of(paths, g.gpu);
    json gj = driver_gpu_json(g, pairs);
    driver_judge_recovery(g, pairs, findings_);
    driver_judge_gpu_pcie(pass, g, gj, pairs, sysfs);
    driver_judge_memory(pass, g, gj, pairs);
    gpus_.push_back(std::move(gj));
  }
  for (const auto& p : s.agent.p2p) { driver_judge_p2p_status(p, p2p_seen_ok_, p2p_status_, findings_); }
}

}  // namespace p2pnode::health
