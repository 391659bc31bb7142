#include "engine/remediate.hpp"

#include <ctime>
#include <string>
#include <vector>

#include "actions/driver_install.hpp"
#include "judge/contention.hpp"
#include "probe/gpu_activity.hpp"
#include "remediation/ladder.hpp"

namespace p2pnode::engine {

namespace {
using remediation::LadderAction;

void log(const PassContext& ctx, LogLevel level, std::string message) {
  if (ctx.log) { ctx.log(LogEvent{level, std::move(message), "", "remediation", ""}); }
}

// Who uses the GPUs: no process on them (NVML, else the device files' holders) is idle; idle and
// no job in the scheduler the profile names (selftest.scheduler) is drained.
void read_activity(const PassContext& ctx, const Profile& profile, remediation::LadderInputs& in) {
  const auto& sched = profile.selftest ? profile.selftest->scheduler : std::nullopt;
  const std::vector<std::string> ignore =
      profile.selftest ? profile.selftest->ignore_processes : std::vector<std::string>{};
  const auto seen = probe::probe_gpu_activity(ctx.root, ctx.agent_runner, ctx.action_runner,
                                              host_paths(ctx.config, ctx.root).agent_path.string(), sched);
  const judge::Busy busy = judge::judge_busy(seen.agent, seen.device_holders, seen.scheduler, ignore);
  in.gpus_idle = busy.processes.empty();
  in.drained = !busy.busy;
}

}  // namespace

std::uint64_t judged_selftests(const RecordedState& st) {
  std::uint64_t n = 0;
  for (const char* v : {"passed", "failed", "error", "below_threshold"}) {
    if (const auto it = st.selftest_runs.find(v); it != st.selftest_runs.end()) { n += it->second; }
  }
  return n;
}

namespace {

remediation::LadderInputs read_inputs(const PassContext& ctx, const Profile& profile, const RecordedState& st) {
  remediation::LadderInputs in;
  in.now_unix = static_cast<std::int64_t>(std::time(nullptr));
  if (!ctx.lost_p2p.empty()) {
    in.lost_p2p = ctx.lost_p2p.front();
  } else if (st.selftest && st.selftest->verdict == "failed") {
    in.lost_p2p =
        "self-test failed" + (st.selftest->reasons.empty() ? std::string() : ": " + st.selftest->reasons.front());
  }
  in.selftests = judged_selftests(st);
  if (st.selftest) {
    in.selftest_passed = st.selftest->verdict == "passed";
    in.selftest_said = st.selftest->verdict + (st.selftest->reasons.empty() ? "" : ": " + st.selftest->reasons.front());
  }
  in.health_watching = ctx.health_watching;
  in.health_read_unix = ctx.health_read_unix;
  if (st.remediation.active || in.lost_p2p) { read_activity(ctx, profile, in); }
  return in;
}

// Takes one rung; returns "done" or what went wrong (the self-test after it decides all the same).
std::string take(const PassContext& ctx, const Profile& profile, const Inventory& inv, Rung rung) {
  switch (rung) {
    case Rung::wait_idle: return "done: the GPUs are idle";
    case Rung::reset_gpu: {
      std::string failed;
      for (const PciDevice* g : inv.gpus()) {
        sys::Command c{gpu_reset_argv(g->bdf)};
        c.timeout = std::chrono::minutes(2);
        c.cancel = ctx.cancel;
        const auto r = ctx.action_runner.run(c);
        log(ctx, r.success() ? LogLevel::notice : LogLevel::error, c.display() + ": " + r.describe());
        if (!r.success()) {
          failed += (failed.empty() ? "" : "; ") + g->bdf + " " + r.describe() +
                    (r.err.empty() ? "" : ": " + r.err.substr(0, 200));
        }
      }
      if (inv.gpus().empty()) { return "failed: no GPU in the last discovery"; }
      return failed.empty() ? "done" : "failed: " + failed;
    }
    case Rung::reload_module: {
      actions::ApplyContext actx{ctx.root, ctx.action_runner, profile};
      actx.force_reload = true;
      actx.log = [&](std::string_view, std::string_view, std::string_view line) {
        log(ctx, LogLevel::info, std::string(line));
      };
      const auto results = actions::make_driver_reload()->apply(actx, inv);
      std::string failed;
      for (const auto& r : results) {
        if (r.outcome != StepOutcome::changed && r.outcome != StepOutcome::unchanged) {
          failed += (failed.empty() ? "" : "; ") + std::string(to_string(r.outcome)) + ": " + r.message;
        }
      }
      return failed.empty() ? "done" : "failed: " + failed;
    }
    case Rung::reboot: {
      sys::Command c{{"systemctl", "reboot"}};
      c.cancel = ctx.cancel;
      const auto r = ctx.action_runner.run(c);
      return r.success() ? "done: reboot requested" : "failed: systemctl reboot " + r.describe();
    }
  }
  return "failed: unknown rung";
}

}  // namespace

std::vector<std::string> gpu_reset_argv(const std::string& bdf) { return {"nvidia-smi", "--gpu-reset", "-i", bdf}; }

LadderRaises run_ladder(const PassContext& ctx, const Profile& profile, Inventory& inv, RecordedState& st,
                        const LadderHooks& hooks) {
  const RemediationSpec& spec = *profile.remediation;
  // At most one decision per rung and one more: a rung, the self-test after it, the next rung.
  for (std::size_t round = 0; round <= spec.rungs.size(); ++round) {
    const auto in = read_inputs(ctx, profile, st);
    const std::string why_before = st.remediation.why;
    const bool was_service = st.remediation.service_required;
    auto step = remediation::decide_ladder(st.remediation, spec, in);
    st.remediation = std::move(step.record);
    const auto& d = step.decision;
    if (d.action == LadderAction::none) { break; }
    if (d.action == LadderAction::recovered) {
      st.remediation_ladders["recovered"]++;
      log(ctx, LogLevel::notice, "remediation: P2P is back, " + d.why + "; the ladder ends");
      break;
    }
    if (d.action == LadderAction::service_required) {
      if (!was_service) {
        st.remediation_ladders["service_required"]++;
        log(ctx, LogLevel::error, "remediation: service required: " + d.why);
      }
      break;
    }
    if (d.action == LadderAction::wait) {
      if (d.why != why_before) { log(ctx, LogLevel::notice, "remediation: " + d.why); }
      st.remediation.why = d.why;
      break;
    }
    // take: the record says so on disk before the rung runs (a power cut never takes it twice),
    // and the node is out of readiness from here (/readyz while the rung and its self-test run;
    // the state the pass ends with replaces this one)
    const Rung rung = *d.rung;
    st.remediation_rungs[to_string(rung)]++;
    log(ctx, LogLevel::warning, "remediation: " + d.why);
    if (st.state == NodeState::ready) { st.state = NodeState::degraded; }
    std::erase_if(st.reasons, [](const std::string& r) { return r.rfind("remediation: ", 0) == 0; });
    st.reasons.insert(st.reasons.begin(), "remediation: " + d.why);
    if (ctx.persist) { ctx.persist(st); }
    const std::string outcome = take(ctx, profile, inv, rung);
    if (!st.remediation.history.empty()) { st.remediation.history.back().outcome = outcome; }
    if (ctx.persist && rung != Rung::reboot) { ctx.persist(st); }  // the outcome, before the self-test
    log(ctx, outcome.rfind("done", 0) == 0 ? LogLevel::notice : LogLevel::error,
        std::string("remediation: ") + to_string(rung) + " " + outcome);
    if (rung == Rung::reboot) {
      break;  // the pass after the boot runs the self-test
    }
    if (rung != Rung::wait_idle) { inv = hooks.rediscover(); }
    hooks.selftest(inv);
  }
  LadderRaises raises;
  const auto& r = st.remediation;
  if (r.service_required) {
    raises.emplace_back(NodeState::blocked, "remediation: service required: " + r.why);
  } else if (r.active) {
    raises.emplace_back(NodeState::degraded, "remediation: " + r.why);
  }
  return raises;
}

}  // namespace p2pnode::engine
