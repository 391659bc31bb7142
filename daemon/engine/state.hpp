#pragma once
// What the daemon knows, recorded after every reconcile: the node state with its reasons, the
// views the API serves, the last self-test and the counters. Persisted to state.json (atomic
// write); a missing or corrupt file is reported and rebuilt, never fatal.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "judge/baseline.hpp"
#include "judge/doorbell.hpp"
#include "remediation/ladder.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::engine {

constexpr int kStateSchemaVersion = 1;

// Worst first: the state of a node is the worst that applies.
enum class NodeState { starting, ready, degraded, reboot_required, blocked, failed };
const char* to_string(NodeState s);
std::optional<NodeState> node_state_from(std::string_view s);
int severity_rank(NodeState s);  // ready 0 … failed 5; starting sits below ready

// A self-test verdict: passed; below_threshold (bandwidth or latency short of the profile);
// failed (a case failed or data was corrupted); error (the agent hung, crashed or lied);
// contended (another process used the GPUs during the run: its figures are reported, not judged).
struct SelftestRecord {
  std::string verdict;
  std::vector<std::string> reasons;
  std::string trigger;
  std::int64_t started_unix = 0;
  double duration_s = 0;
  nlohmann::json result;  // the validated agent document; null when there was none
  // Per bandwidth cell: measured, ceiling, expected, ratio, threshold, baseline, regressed.
  nlohmann::json expectations = nlohmann::json::array();
  std::vector<std::string> warnings;  // regressions against the node's own baseline
  std::vector<std::string> notes;     // what changes neither the verdict nor readiness (NVML and CUDA disagreeing)
  nlohmann::json contention;          // judge::to_json(Contention): who else used the GPUs; null: not known
};

// A self-test that did not run (selftest.when): when, what asked for it, why, and what was busy.
struct SelftestSkip {
  std::int64_t at_unix = 0;
  std::string trigger, reason;
  bool busy = false;    // the GPUs were in use (retried after selftest.retry_busy); false: when is never
  nlohmann::json seen;  // judge::to_json(Busy)
};

struct RecordedState {
  NodeState state = NodeState::starting;
  std::vector<std::string> reasons;
  std::string profile;
  std::string trigger;
  std::int64_t reconciled_unix = 0;
  double reconcile_duration_s = 0;
  nlohmann::json node = nlohmann::json::object();      // render::node_json
  nlohmann::json driver = nlohmann::json::object();    // loaded, userspace, wanted, match
  nlohmann::json findings = nlohmann::json::array();   // core Finding JSON
  nlohmann::json devices = nlohmann::json::object();   // gpus, nvme, bridges
  nlohmann::json topology = nlohmann::json::object();  // devices, matrix of pair classes
  nlohmann::json plan = nlohmann::json::object();      // what is left after apply
  nlohmann::json applied = nlohmann::json::array();    // step results of the last apply
  std::string findings_table;                          // render_check_table, for `p2pnode status`
  std::optional<SelftestRecord> selftest;              // the last run that judges the node
  std::optional<SelftestRecord> selftest_contended;    // the last run that shared the GPUs (judges nothing)
  std::optional<SelftestSkip> selftest_skipped;        // the last self-test that did not run; cleared by a run
  std::optional<std::int64_t> selftest_last_success_unix;
  double selftest_last_success_duration_s = 0;
  std::map<std::string, std::uint64_t> reconcile_runs;       // by resulting node state
  std::map<std::string, std::uint64_t> selftest_runs;        // by verdict
  std::optional<judge::DoorbellRecord> nvme_doorbell;        // the last NVMe doorbell test
  judge::Baselines baselines;                                // per pair and case, the last runs' figures
  remediation::LadderRecord remediation;                     // where the remediation ladder stands
  std::map<std::string, std::uint64_t> remediation_rungs;    // rungs taken, by rung
  std::map<std::string, std::uint64_t> remediation_ladders;  // ladders ended: recovered, service_required
  // Not persisted: the matched profile's self-test schedule (re-read on every pass).
  std::optional<std::chrono::nanoseconds> profile_selftest_schedule;
  std::optional<std::chrono::nanoseconds> profile_selftest_retry;  // selftest.retry_busy
  bool profile_remediation = false;                                // the matched profile names a remediation ladder
};

nlohmann::json to_json(const SelftestRecord& s);
nlohmann::json to_json(const SelftestSkip& s);
nlohmann::json to_json(const RecordedState& s);
// Strict: every field is type-checked; an error names the first bad one.
Result<RecordedState> state_from_json(const nlohmann::json& j);

struct StateLoad {
  RecordedState state;
  std::string problem;  // empty: loaded; else why it was rebuilt ("missing", "corrupt: …")
  bool loaded = false;
};

class StateStore {
 public:
  StateStore(const sys::SysRoot& root, std::string path) : root_(root), path_(std::move(path)) {}
  const std::string& path() const { return path_; }
  StateLoad load() const;
  Status save(const RecordedState& s) const;

 private:
  const sys::SysRoot& root_;
  std::string path_;
};

}  // namespace p2pnode::engine
