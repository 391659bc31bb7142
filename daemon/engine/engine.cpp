#include "engine/engine.hpp"

#include <algorithm>
#include <ctime>
#include <set>

#include "core/json_text.hpp"
#include "engine/health_metrics.hpp"
#include "engine/metrics.hpp"
#include "engine/reconcile.hpp"

namespace p2pnode::engine {

const char* to_string(RequestResult r) {
  switch (r) {
    case RequestResult::started: return "started";
    case RequestResult::queued: return "queued";
    case RequestResult::already_queued: return "already_queued";
    case RequestResult::ignored: return "ignored";
  }
  return "?";
}

Engine::Engine(EngineDeps deps, DaemonConfig config, std::string version)
    : deps_(std::move(deps)),
      version_(std::move(version)),
      config_(std::move(config)),
      health_pass_(deps_.root, deps_.health_runner),
      health_body_(health_body_idle(config_)) {
  runtime_.version = version_;
  runtime_.started_unix = static_cast<std::int64_t>(std::time(nullptr));
}

Engine::~Engine() { stop(); }

void Engine::start() {
  {
    std::lock_guard lk(mu_);
    StateStore store(deps_.root, config_.state_file());
    StateLoad loaded = store.load();
    runtime_.state_file = config_.state_file();
    runtime_.config_file = config_.source_file;
    if (loaded.loaded) {
      state_ = std::move(loaded.state);
      state_.state = NodeState::starting;  // nothing is decided until this daemon reconciles
      state_.reasons = {"the first reconcile since the daemon started has not finished"};
      if (deps_.log) { deps_.log({LogLevel::info, "state loaded from " + store.path(), "", "state", ""}); }
    } else {
      runtime_.state_problem = "state file " + loaded.problem;
      state_.reasons = {"the first reconcile since the daemon started has not finished"};
      if (deps_.log) { deps_.log({LogLevel::warning, "state file " + loaded.problem, "", "state", ""}); }
    }
    // A stored self-test counts unless the daemon is told to test on start.
    pending_ = true;
    pending_trigger_ = "start";
    pending_selftest_ = config_.selftest_on_start || !state_.selftest;
    publish();
  }
  thread_ = std::thread([this] { worker(); });
  health_thread_ = std::thread([this] { health_worker(); });
  deadline_thread_ = std::thread([this] { deadline_worker(); });
}

void Engine::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cancel_ = true;       // a running self-test is killed rather than waited for
  pass_cancel_ = true;  // and so is every command of the pass (a DKMS build resumes at the next start)
  cv_.notify_all();
  health_cv_.notify_all();
  deadline_cv_.notify_all();
  if (thread_.joinable()) { thread_.join(); }
  if (health_thread_.joinable()) { health_thread_.join(); }
  if (deadline_thread_.joinable()) { deadline_thread_.join(); }
}

void Engine::deadline_worker() {
  std::unique_lock lk(mu_);
  for (;;) {
    deadline_cv_.wait(lk, [&] { return stopping_ || running_.load(); });
    if (stopping_) { return; }
    const std::uint64_t id = pass_id_;
    const auto limit = pass_limit_;
    auto over = [&] { return stopping_ || pass_id_ != id || !running_.load(); };
    if (deadline_cv_.wait_until(lk, pass_started_ + limit, over)) { continue; }
    pass_overdue_ = true;
    pass_cancel_ = true;  // kills the pass's running command and fails the ones it would start
    if (deps_.log) {
      deps_.log({LogLevel::error,
                 "the reconcile pass ran past reconcile.time_limit (" + format_duration(limit) +
                     "): cancelled, its commands killed",
                 "", "reconcile", ""});
    }
    deadline_cv_.wait(lk, over);
  }
}

bool Engine::wedged() const {
  std::lock_guard lk(mu_);
  return running_.load() && pass_overdue_ &&
         std::chrono::steady_clock::now() > pass_started_ + pass_limit_ + std::chrono::minutes(10);
}

RequestResult Engine::request(const std::string& trigger, bool selftest, bool force) {
  RequestResult r;
  {
    std::lock_guard lk(mu_);
    if (!device_guard_.allows(trigger)) { return RequestResult::ignored; }
    if (pending_) {
      r = RequestResult::already_queued;
    } else {
      r = running_ ? RequestResult::queued : RequestResult::started;
      pending_ = true;
      pending_trigger_ = trigger;
    }
    pending_selftest_ = pending_selftest_ || selftest;
    pending_force_ = pending_force_ || (selftest && force);
    publish();
  }
  cv_.notify_all();
  return r;
}

void Engine::set_config(DaemonConfig config) {
  std::lock_guard lk(mu_);
  config_ = std::move(config);
  runtime_.config_file = config_.source_file;
  runtime_.config_problem.clear();
  publish();
}

void Engine::set_config_problem(std::string problem) {
  std::lock_guard lk(mu_);
  runtime_.config_problem = std::move(problem);
  publish();
}

DaemonConfig Engine::config() const {
  std::lock_guard lk(mu_);
  return config_;
}

std::shared_ptr<const Snapshot> Engine::snapshot() const {
  std::lock_guard lk(mu_);
  return snapshot_;
}

std::optional<std::chrono::system_clock::time_point> Engine::next_ladder_pass_locked() const {
  const auto& r = state_.remediation;
  if (!state_.profile_remediation || !r.active || r.service_required) { return std::nullopt; }
  // A ladder under way looks again every minute: for idle GPUs, a drained node, the self-test after a
  // rung (one skipped on busy GPUs), a health pass since.
  return std::chrono::system_clock::from_time_t(static_cast<std::time_t>(state_.reconciled_unix)) +
         std::chrono::minutes(1);
}

std::optional<std::chrono::system_clock::time_point> Engine::next_selftest_locked() const {
  const auto interval = selftest_interval(config_, state_);
  if (!interval) { return std::nullopt; }
  // From the last attempt, or the last pass that wanted one and skipped it (a blocked node must
  // not loop on a due self-test it cannot run).
  std::int64_t last = state_.selftest ? state_.selftest->started_unix : runtime_.started_unix;
  if (state_.selftest_contended) { last = std::max(last, state_.selftest_contended->started_unix); }
  last = std::max(last, last_selftest_request_unix_);
  auto next = std::chrono::system_clock::from_time_t(static_cast<std::time_t>(last)) +
              std::chrono::duration_cast<std::chrono::system_clock::duration>(*interval);
  // A run skipped because the GPUs were busy is tried again sooner (selftest.retry_busy).
  if (const auto& skip = state_.selftest_skipped; skip && skip->busy && state_.profile_selftest_retry) {
    next = std::min(
        next, std::chrono::system_clock::from_time_t(static_cast<std::time_t>(skip->at_unix)) +
                  std::chrono::duration_cast<std::chrono::system_clock::duration>(*state_.profile_selftest_retry));
  }
  return next;
}

void Engine::publish() {
  runtime_.reconcile_running = running_;
  runtime_.reconcile_queued = pending_;
  runtime_.metrics_full_detail = config_.metrics_full_detail;
  if (auto next = next_selftest_locked(); next && decided_) {
    runtime_.next_selftest_unix = static_cast<std::int64_t>(std::chrono::system_clock::to_time_t(*next));
  } else {
    runtime_.next_selftest_unix.reset();
  }
  if (auto interval = selftest_interval(config_, state_)) {
    runtime_.selftest_schedule_s = std::chrono::duration<double>(*interval).count();
  } else {
    runtime_.selftest_schedule_s.reset();
  }
  runtime_.health = health_summary(health_body_);
  auto s = std::make_shared<Snapshot>();
  s->state = state_;
  s->health_holds = health_holds(health_body_);
  s->ready = state_.state == NodeState::ready && s->health_holds.empty();
  s->decided = decided_;
  s->status = json_text(status_body(state_, runtime_));
  s->readyz = json_text(readyz_body(state_));
  s->findings = json_text(findings_body(state_));
  s->findings_table = state_.findings_table;
  s->devices = json_text(devices_body(state_));
  s->topology = json_text(topology_body(state_));
  s->plan = json_text(plan_body(state_));
  s->selftest = json_text(selftest_body(state_));
  s->metrics = render_metrics(state_, runtime_) + render_health_metrics(health_body_);
  s->health = json_text(health_body_);
  snapshot_ = std::move(s);
}

// One reconcile pass as the worker takes it, under mu_: what was asked, the configuration and
// state it starts from, and what the health pass knew then.
struct Engine::PassWork {
  std::string trigger;
  bool selftest = false;
  bool force = false;
  DaemonConfig config;
  RecordedState state;  // a copy of state_: the pass updates it, record_pass publishes it
  std::vector<std::string> untrusted_memory;
  std::vector<std::string> lost_p2p;
  std::int64_t health_read_unix = 0;
};

// No pass pending: one is queued when the next scheduled self-test or ladder pass is due (true);
// otherwise sleeps until then or a request, and returns false to look again.
bool Engine::schedule_due_pass_locked(std::unique_lock<std::mutex>& lk) {
  // Sleep until a request or the next scheduled self-test: an idle daemon uses no CPU.
  auto next = decided_ ? next_selftest_locked() : std::nullopt;
  const auto ladder = decided_ ? next_ladder_pass_locked() : std::nullopt;
  if (next && *next <= std::chrono::system_clock::now()) {
    pending_ = true;
    pending_trigger_ = "schedule";
    pending_selftest_ = true;
    return true;
  }
  if (ladder && *ladder <= std::chrono::system_clock::now()) {
    pending_ = true;
    pending_trigger_ = "remediation";
    return true;
  }
  if (ladder && (!next || *ladder < *next)) { next = ladder; }
  // Bounded, so a wall-clock jump cannot push the schedule out by more than an hour.
  auto wake = std::chrono::system_clock::now() + std::chrono::hours(1);
  if (next && *next < wake) { wake = *next; }
  cv_.wait_until(lk, wake);
  return false;
}

// Takes the pending request off the queue and starts the deadline's clock.
Engine::PassWork Engine::begin_pass_locked() {
  PassWork w;
  w.trigger = pending_trigger_;
  w.selftest = pending_selftest_;
  w.force = pending_force_;
  if (w.selftest) { last_selftest_request_unix_ = static_cast<std::int64_t>(std::time(nullptr)); }
  pending_ = false;
  pending_selftest_ = false;
  pending_force_ = false;
  running_ = true;
  w.config = config_;
  pass_started_ = std::chrono::steady_clock::now();
  pass_limit_ = w.config.reconcile_time_limit;
  pass_overdue_ = false;
  ++pass_id_;
  pass_cancel_ = cancel_.load();
  deadline_cv_.notify_all();
  w.state = state_;
  // Memory the health pass says cannot be trusted: the self-test's integrity verdict names it.
  for (const auto& f : health_body_.value("findings", nlohmann::json::array())) {
    if (f.is_object() && f.value("check", "") == "health.memory" && f.value("severity", "") == "error") {
      w.untrusted_memory.push_back(f.value("summary", ""));
    }
  }
  w.lost_p2p = lost_p2p_paths(health_body_);
  if (const auto at = health_body_.find("last_pass_unix"); at != health_body_.end() && at->is_number_integer()) {
    w.health_read_unix = at->get<std::int64_t>();
  }
  return w;
}

// The pass itself, outside mu_ and apart from a health agent run; a pass that ran past
// reconcile.time_limit (the deadline worker cancelled it) fails, whatever it found.
void Engine::run_pass(PassWork& w) {
  sys::CancellingRunner actions(deps_.action_runner, &pass_cancel_), agents(deps_.agent_runner, &pass_cancel_);
  PassContext ctx{deps_.root, actions, agents, w.config, deps_.log, w.trigger, w.selftest, w.force, &pass_cancel_};
  ctx.untrusted_memory = std::move(w.untrusted_memory);
  ctx.lost_p2p = std::move(w.lost_p2p);
  ctx.health_watching = w.config.health.enabled;
  ctx.health_read_unix = w.health_read_unix;
  // A remediation rung's record: on disk before the rung runs, and published, so that /readyz and
  // /v1/status say what the ladder does while the pass goes on.
  ctx.persist = [&](const RecordedState& mid) {
    const Status ok = StateStore(deps_.root, w.config.state_file()).save(mid);
    if (!ok && deps_.log) { deps_.log({LogLevel::error, ok.error().message, "", "record", ""}); }
    std::lock_guard lk(mu_);
    state_ = mid;
    publish();
  };
  std::unique_lock agent_guard(agent_mu_);  // waits out a health agent run (its time limit at most)
  try {
    reconcile_pass(ctx, w.state);
  } catch (const std::exception& e) {  // a bug in a step must not take the daemon down
    w.state.state = NodeState::failed;
    w.state.reasons = {std::string("reconcile aborted: ") + e.what()};
    w.state.reconcile_runs["failed"]++;
    if (deps_.log) { deps_.log({LogLevel::error, w.state.reasons.front(), "", "reconcile", ""}); }
  }
  agent_guard.unlock();
  std::lock_guard overdue_lk(mu_);
  if (pass_overdue_) {
    w.state.state = NodeState::failed;
    w.state.reasons.insert(w.state.reasons.begin(), "the reconcile pass ran past reconcile.time_limit (" +
                                                        format_duration(w.config.reconcile_time_limit) +
                                                        ") and was cancelled; the next pass starts over");
  }
}

// Saves the pass's state to the state file, then makes it the engine's and publishes it; returns
// the new snapshot with lk held again.
std::shared_ptr<const Snapshot> Engine::record_pass(PassWork& w, std::unique_lock<std::mutex>& lk) {
  StateStore store(deps_.root, w.config.state_file());
  const Status saved = store.save(w.state);
  if (!saved && deps_.log) { deps_.log({LogLevel::error, saved.error().message, "", "record", ""}); }

  bool changed_box = false;
  for (const auto& step : w.state.applied) { changed_box = changed_box || step.value("writes", 0) > 0; }
  lk.lock();
  device_guard_.after_pass(w.trigger, changed_box);
  state_ = std::move(w.state);
  runtime_.state_file = w.config.state_file();
  if (!saved) {
    runtime_.state_problem = saved.error().message;
  } else if (runtime_.state_problem.rfind("writing", 0) == 0) {
    runtime_.state_problem.clear();
  }
  decided_ = true;
  running_ = false;
  deadline_cv_.notify_all();
  publish();
  return snapshot_;
}

void Engine::worker() {
  std::unique_lock lk(mu_);
  for (;;) {
    if (stopping_) { return; }
    if (!pending_ && !schedule_due_pass_locked(lk)) { continue; }
    PassWork work = begin_pass_locked();
    publish();
    lk.unlock();
    run_pass(work);
    const auto snap = record_pass(work, lk);
    lk.unlock();
    if (deps_.on_record) { deps_.on_record(*snap); }
    lk.lock();
  }
}

void Engine::health_worker() {
  std::unique_lock lk(mu_);
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    health_cv_.wait_until(lk, next, [&] { return stopping_; });
    if (stopping_) { return; }
    if (std::chrono::steady_clock::now() < next) { continue; }
    const DaemonConfig config = config_;
    if (!config.health.enabled) {
      health_body_ = health_body_idle(config);
      publish();
      next = std::chrono::steady_clock::now() + std::chrono::seconds(10);  // a reload may turn it on
      continue;
    }
    // No device recorded yet and no pass decided: the first discovery is still running (the health
    // body says so instead of "no GPU or NVMe drive").
    const nlohmann::json devices = !decided_ && state_.devices.empty() ? nlohmann::json() : state_.devices;
    lk.unlock();
    std::unique_lock agent_guard(agent_mu_, std::try_to_lock);
    const std::string skip =
        agent_guard.owns_lock()
            ? std::string()
            : "a reconcile pass is running (it may reload the driver or run the self-test); read on a later pass";
    nlohmann::json body;
    try {
      body = health_pass_.run(config, devices, skip, &cancel_);
    } catch (const std::exception& e) {  // a bug in a read must not take the daemon down
      body = health_body_idle(config);
      body["problem"] = std::string("health pass aborted: ") + e.what();
      if (deps_.log) { deps_.log({LogLevel::error, body["problem"].get<std::string>(), "", "health", ""}); }
    }
    if (agent_guard.owns_lock()) { agent_guard.unlock(); }
    lk.lock();
    // A finding that was not there in the last pass goes to the journal once.
    auto key = [](const nlohmann::json& f) {
      return f.value("check", "") + " " + f.value("subject", "") + " " + f.value("severity", "");
    };
    std::set<std::string> before;
    for (const auto& f : health_body_.value("findings", nlohmann::json::array())) { before.insert(key(f)); }
    for (const auto& f : body.value("findings", nlohmann::json::array())) {
      if (deps_.log && !before.count(key(f))) {
        deps_.log({f.value("severity", "") == "error" ? LogLevel::error : LogLevel::warning, f.value("summary", ""),
                   f.value("check", ""), "health", f.value("subject", "")});
      }
    }
    const bool lost_before = !lost_p2p_paths(health_body_).empty();
    health_body_ = std::move(body);
    publish();
    next = std::chrono::steady_clock::now() + config.health.interval;
    // A ladder starts on the pass after a loss is seen, and one under way decides on a fresh read.
    const bool lost_now = !lost_p2p_paths(health_body_).empty();
    if (state_.profile_remediation &&
        (lost_now != lost_before || (state_.remediation.active && !state_.remediation.service_required)) && !pending_) {
      pending_ = true;
      pending_trigger_ = "health";
      cv_.notify_all();
    }
  }
}

}  // namespace p2pnode::engine
