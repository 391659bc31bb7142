#include "engine/health_pass.hpp"

#include <chrono>
#include <ctime>

namespace p2pnode::engine {

namespace {
using json = nlohmann::json;

double seconds(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }

json base(const DaemonConfig& c) {
  return {{"schema_version", health::kHealthSchemaVersion},
          {"enabled", c.health.enabled},
          {"interval_s", seconds(c.health.interval)},
          {"window_s", seconds(c.health.window)}};
}
}  // namespace

std::vector<health::Endpoint> endpoints_from_devices(const json& devices) {
  std::vector<health::Endpoint> out;
  if (!devices.is_object()) { return out; }
  for (const char* kind : {"gpus", "nvme"}) {
    const auto it = devices.find(kind);
    if (it == devices.end() || !it->is_array()) { continue; }
    for (const auto& d : *it) {
      if (!d.is_object() || !d.contains("bdf") || !d["bdf"].is_string()) { continue; }
      health::Endpoint e;
      e.bdf = d["bdf"];
      e.kind = std::string(kind) == "gpus" ? "gpu" : "nvme";
      if (d.contains("upstream_bridges") && d["upstream_bridges"].is_array()) {
        for (const auto& b : d["upstream_bridges"]) {
          if (b.is_string()) { e.upstream.push_back(b); }
        }
      }
      if (d.contains("root_complex") && d["root_complex"].is_string()) { e.root_complex = d["root_complex"]; }
      if (d.contains("numa_node") && d["numa_node"].is_number_integer()) { e.numa_node = d["numa_node"]; }
      out.push_back(std::move(e));
    }
  }
  return out;
}

json health_body_idle(const DaemonConfig& c) {
  json j = base(c);
  j["passes"] = 0;
  j["last_pass_unix"] = nullptr;
  j["pass_duration_s"] = nullptr;
  j["problem"] = c.health.enabled ? json("no health pass yet") : json("health watching is off (health.enabled: false)");
  j["findings"] = json::array();
  j["devices"] = json::array();
  j["nvlink"] = nullptr;
  j["gpus"] = json::array();
  j["p2p_status"] = json::array();
  j["xid"] = nullptr;
  return j;
}

json HealthPass::run(const DaemonConfig& config, const json& devices, const std::string& nvlink_skip,
                     const std::atomic<bool>* cancel) {
  const auto t0 = std::chrono::steady_clock::now();
  monitor_.set_window(seconds(config.health.window));
  monitor_.set_limits(config.health.limits);
  const health::PathIndex paths = health::index_paths(endpoints_from_devices(devices));
  health::HealthSample s;
  s.mono_s = std::chrono::duration<double>(t0.time_since_epoch()).count();
  s.unix_s = static_cast<std::int64_t>(std::time(nullptr));
  s.devices = probe::probe_device_health(root_, paths);
  s.xid = kmsg_.read_new();
  bool any_gpu = false;
  for (const auto& [bdf, kind] : paths.kind) { any_gpu = any_gpu || kind == "gpu"; }
  if (!config.health.nvlink) {
    s.agent.skipped = "off in the configuration (health.nvlink: false)";
  } else if (!any_gpu) {
    s.agent.skipped = "no GPU in the last discovery";
  } else if (!nvlink_skip.empty()) {
    s.agent.skipped = nvlink_skip;
  } else if (!runner_) {
    s.agent.skipped = "no runner for the agent in this process";
  } else if (last_nvlink_ && t0 - last_nvlink_at_ < config.health.nvlink_interval) {
    s.agent = *last_nvlink_;
  } else {
    s.agent = probe::probe_nvlink(*runner_, root_.host_path(config.agent_path).string(), config.health.agent_time_limit,
                                  cancel);
    last_nvlink_ = s.agent;
    last_nvlink_at_ = t0;
    last_nvlink_unix_ = s.unix_s;
  }
  s.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  monitor_.update(s, paths);
  json j = base(config);
  j["passes"] = monitor_.passes();
  j["last_pass_unix"] = s.unix_s;
  j["pass_duration_s"] = s.duration_s;
  j["problem"] = !paths.devices.empty() ? json(nullptr)
                 : !devices.is_object() ? json("the first discovery has not finished: nothing to watch yet")
                                        : json("no GPU or NVMe drive in the last discovery: nothing to watch");
  json v = monitor_.view();
  if (v.contains("nvlink") && v["nvlink"].is_object()) {
    v["nvlink"]["read_unix"] = s.agent.read && last_nvlink_unix_ ? json(last_nvlink_unix_) : json(nullptr);
  }
  for (auto it = v.begin(); it != v.end(); ++it) { j[it.key()] = it.value(); }
  return j;
}

}  // namespace p2pnode::engine
