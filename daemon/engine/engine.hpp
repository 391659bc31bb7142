#pragma once
// The engine: one worker thread runs reconcile passes one at a time. A request while one runs
// is queued once (requests merge, they do not stack). After every pass the state is stored and
// a Snapshot of every response body is published; HTTP handlers only read snapshots.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/config.hpp"
#include "engine/device_guard.hpp"
#include "engine/health_pass.hpp"
#include "engine/log.hpp"
#include "engine/state.hpp"
#include "engine/views.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::engine {

// Every body the API serves, rendered once per change.
struct Snapshot {
  RecordedState state;
  bool ready = false;
  bool decided = false;  // a reconcile has decided the state since the daemon started
  std::string status, readyz, findings, findings_table, devices, topology, plan, selftest, metrics;
  std::vector<std::string> health_holds;  // health findings that take the node out of P2P readiness
  std::string health;                     // /v1/health: the passive health pass (engine/health_pass.hpp)
};

struct EngineDeps {
  const sys::SysRoot& root;
  sys::CommandRunner& action_runner;
  sys::CommandRunner& agent_runner;
  LogFn log;
  // Called on the worker thread after each pass is recorded (sd_notify READY/STATUS).
  std::function<void(const Snapshot&)> on_record;
  // Runs `p2pnode-agent --health` for the health pass; nullptr: NVLink is not read (unit tests).
  sys::CommandRunner* health_runner = nullptr;
};

enum class RequestResult { started, queued, already_queued, ignored };  // ignored: DeviceLoopGuard
const char* to_string(RequestResult r);

class Engine {
 public:
  Engine(EngineDeps deps, DaemonConfig config, std::string version);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Loads the state file, publishes the first snapshot and starts the worker with a "start" pass.
  void start();
  void stop();

  // force: a self-test that runs even while other processes use the GPUs (selftest.when).
  RequestResult request(const std::string& trigger, bool selftest, bool force = false);
  // A new config applies from the next pass on; problem is shown in /v1/status (empty: clear).
  void set_config(DaemonConfig config);
  void set_config_problem(std::string problem);
  DaemonConfig config() const;

  std::shared_ptr<const Snapshot> snapshot() const;
  bool pass_running() const { return running_.load(); }
  // A pass still running 10 minutes after it was cancelled for running past reconcile.time_limit:
  // the daemon stops feeding systemd's watchdog, which then restarts it.
  bool wedged() const;

 private:
  void worker();
  // The worker's steps (engine.cpp): wait for a pass, take it under mu_, run it, record it.
  struct PassWork;
  bool schedule_due_pass_locked(std::unique_lock<std::mutex>& lk);
  PassWork begin_pass_locked();
  void run_pass(PassWork& work);
  std::shared_ptr<const Snapshot> record_pass(PassWork& work, std::unique_lock<std::mutex>& lk);
  void health_worker();    // one passive health pass every config_.health.interval
  void deadline_worker();  // cancels a pass that runs past config_.reconcile_time_limit
  void publish();          // builds a Snapshot from state_ and the runtime, under mu_
  std::optional<std::chrono::system_clock::time_point> next_selftest_locked() const;
  std::optional<std::chrono::system_clock::time_point> next_ladder_pass_locked() const;

  EngineDeps deps_;
  std::string version_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  DaemonConfig config_;
  RecordedState state_;
  Runtime runtime_;
  bool decided_ = false;
  std::int64_t last_selftest_request_unix_ = 0;  // a pass that wanted one (it may have been skipped)
  bool pending_ = false, pending_selftest_ = false, pending_force_ = false, stopping_ = false;
  std::string pending_trigger_;
  std::atomic<bool> running_{false};
  std::atomic<bool> cancel_{false};       // the daemon is stopping
  std::atomic<bool> pass_cancel_{false};  // this pass's commands are killed: stopping, or overdue
  std::chrono::steady_clock::time_point pass_started_{};
  std::chrono::milliseconds pass_limit_{0};
  std::uint64_t pass_id_ = 0;
  bool pass_overdue_ = false;
  std::condition_variable deadline_cv_;
  std::thread deadline_thread_;
  DeviceLoopGuard device_guard_;  // stop(): kills a running agent (PassContext::cancel)
  std::shared_ptr<const Snapshot> snapshot_;
  std::thread thread_;
  // Health: its own thread and body; agent_mu_ keeps its agent run and a reconcile pass apart (a
  // pass may reload the driver, which an NVML client would hold open).
  HealthPass health_pass_;
  nlohmann::json health_body_;
  std::mutex agent_mu_;
  std::condition_variable health_cv_;
  std::thread health_thread_;
};

}  // namespace p2pnode::engine
