#pragma once
// What the API serves, rendered from recorded data: the device list, the topology matrix, the
// driver versions, and the response bodies of every GET endpoint. Pure functions of their inputs.
#include <string>

#include <nlohmann/json.hpp>

#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "engine/state.hpp"

namespace p2pnode::engine {

nlohmann::json devices_view(const Inventory& inv);   // gpus, nvme, bridges on their paths
nlohmann::json topology_view(const Inventory& inv);  // devices and the pair-class matrix
nlohmann::json driver_view(const Inventory& inv, const Profile* profile);

// What the daemon is doing right now, beside the recorded state.
struct Runtime {
  std::string version;
  std::int64_t started_unix = 0;
  std::string config_file;     // empty: defaults
  std::string config_problem;  // a reload that was refused, with why
  std::string state_file;
  std::string state_problem;  // the state file was missing or corrupt at start, or cannot be written
  bool reconcile_running = false;
  bool reconcile_queued = false;
  std::optional<std::int64_t> next_selftest_unix;
  std::optional<double> selftest_schedule_s;  // the schedule in effect; none: no scheduled self-test
  nlohmann::json health = nullptr;            // health_summary() of the last health pass
  bool metrics_full_detail = false;           // the config's metrics.detail: full
};

nlohmann::json status_body(const RecordedState& s, const Runtime& rt);
// /v1/status's health part: passes, when, findings by severity, and their one-line summaries.
nlohmann::json health_summary(const nlohmann::json& health_body);
nlohmann::json readyz_body(const RecordedState& s);
// What in the last health pass takes the node out of P2P readiness: a GPU whose driver asks for
// peer traffic to stop (recovery action drain_p2p or drain_and_reset), one line each, naming it.
std::vector<std::string> health_holds(const nlohmann::json& health_body);
// The lost P2P paths the remediation ladder acts on: the holds above, a pair whose P2P status NVML
// no longer reports OK, and an NVLink that went down.
std::vector<std::string> lost_p2p_paths(const nlohmann::json& health_body);
nlohmann::json findings_body(const RecordedState& s);  // the `check --json` document, plus state
nlohmann::json devices_body(const RecordedState& s);
nlohmann::json topology_body(const RecordedState& s);
// GET /v1/plan: the plan and the last apply's steps. Served without a token, so a step's
// installer_log_tail (the NVIDIA installer's own log: host paths, kernel and module details) is left
// out; `p2pnode apply` prints it on the node and the file stays in /var/log.
nlohmann::json plan_body(const RecordedState& s);
nlohmann::json selftest_body(const RecordedState& s);
// The self-test's bandwidth cells as text: measured / expected (ratio), threshold, baseline.
std::string expectations_table(const nlohmann::json& rows);

}  // namespace p2pnode::engine
