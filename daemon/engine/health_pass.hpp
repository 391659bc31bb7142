#pragma once
// One passive health pass (interval from the config, beside the reconcile, on its own thread):
// read AER counters and links of the devices the last discovery put on P2P paths, the new kernel
// log records, NVLink through `p2pnode-agent --health`; feed the monitor; render /v1/health.
// Never touches config space, never starts GPU work.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config.hpp"
#include "health/monitor.hpp"
#include "probe/health_probe.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::engine {

// GPUs and drives with their upstream bridges, from the recorded devices view (devices_view).
std::vector<health::Endpoint> endpoints_from_devices(const nlohmann::json& devices);

class HealthPass {
 public:
  // runner: for the agent; nullptr: NVLink is not read (said in the view).
  HealthPass(const sys::SysRoot& root, sys::CommandRunner* runner) : root_(root), runner_(runner), kmsg_(root) {}

  // devices: the recorded devices view; nvlink_skip: why NVLink must not be read now (empty: read it).
  // Returns the /v1/health body.
  nlohmann::json run(const DaemonConfig& config, const nlohmann::json& devices, const std::string& nvlink_skip,
                     const std::atomic<bool>* cancel);

 private:
  const sys::SysRoot& root_;
  sys::CommandRunner* runner_;
  probe::KmsgReader kmsg_;
  health::HealthMonitor monitor_;
  // The last agent reading and when it was taken: between agent runs the monitor sees it again.
  std::optional<health::AgentReading> last_nvlink_;
  std::chrono::steady_clock::time_point last_nvlink_at_{};
  std::int64_t last_nvlink_unix_ = 0;
};

// The body before any pass (or with health off).
nlohmann::json health_body_idle(const DaemonConfig& config);

}  // namespace p2pnode::engine
