#include "engine/reconcile.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "actions/action.hpp"
#include "checks/check.hpp"
#include "engine/remediate.hpp"
#include "engine/selftest.hpp"
#include "engine/views.hpp"
#include "judge/bandwidth_finding.hpp"
#include "judge/contention.hpp"
#include "judge/doorbell.hpp"
#include "judge/expectations.hpp"
#include "judge/verdict.hpp"
#include "lifecycle/reload.hpp"
#include "probe/agent_run.hpp"
#include "probe/gpu_activity.hpp"
#include "probe/nvme.hpp"
#include "probe/probe.hpp"
#include "profile/loader.hpp"
#include "profile/select.hpp"
#include "render/report.hpp"

namespace p2pnode::engine {

namespace {
using json = nlohmann::json;

struct Decision {
  NodeState state = NodeState::ready;
  std::vector<std::string> reasons;
  void raise(NodeState s, std::string reason) {
    if (severity_rank(s) > severity_rank(state)) { state = s; }
    reasons.push_back(std::move(reason));
  }
};

std::int64_t now_unix() { return static_cast<std::int64_t>(std::time(nullptr)); }

void log(const PassContext& ctx, LogLevel level, std::string message, std::string step, std::string device = {},
         std::string check = {}) {
  if (ctx.log) { ctx.log(LogEvent{level, std::move(message), std::move(check), std::move(step), std::move(device)}); }
}

void record_inventory(RecordedState& st, const Inventory& inv, const Profile* profile) {
  st.node = render::node_json(inv);
  st.devices = devices_view(inv);
  st.topology = topology_view(inv);
  st.driver = driver_view(inv, profile);
}

// The box as the probes read it; the userspace driver through ldconfig and nvidia-smi too when
// its files did not name one (the action runner refuses every command under --root).
Inventory discover(const PassContext& ctx) {
  Inventory inv = probe::probe_inventory(ctx.root);
  probe::probe_userspace_by_commands(ctx.root, ctx.action_runner, inv.nvidia);
  probe::probe_gpu_memory_by_commands(ctx.action_runner, inv);
  probe::probe_module_signatures_by_commands(ctx.root, ctx.action_runner, inv);
  return inv;
}

// The agent run, then the judge's verdict on what it did and printed.
judge::AgentRun run_agent(const PassContext& ctx, const std::string& path, const std::vector<std::string>& args,
                          std::chrono::nanoseconds limit, const SelftestSpec& spec, const Inventory& inv) {
  auto p = probe::run_agent(ctx.agent_runner, path, args, limit, judge::kMaxAgentOutputBytes + 1, ctx.cancel);
  return judge::judge_agent_run(std::move(p.process), p.started_unix, p.duration_s, path, limit, spec, inv);
}

// Whether the self-test may run now (selftest.when): with `idle`, what else uses the GPUs is read
// first (NVML through the agent, else the device files' holders, and the scheduler). A skip is
// recorded with its reason and what was seen; a busy one is tried again after retry_busy.
bool may_run_selftest(const PassContext& ctx, const SelftestSpec& spec, const std::string& agent, RecordedState& st) {
  judge::Busy busy;
  if (spec.when == SelftestWhen::idle && !ctx.force_selftest) {
    const auto seen = probe::probe_gpu_activity(ctx.root, ctx.agent_runner, ctx.action_runner, agent, spec.scheduler);
    busy = judge::judge_busy(seen.agent, seen.device_holders, seen.scheduler, spec.ignore_processes);
    if (!busy.note.empty()) {
      log(ctx, LogLevel::info, "who uses the GPUs: " + busy.note + "; read the device files instead", "selftest");
    }
  }
  const auto decision = judge::decide_selftest(spec.when, ctx.force_selftest, busy);
  if (decision.run) { return true; }
  st.selftest_skipped = SelftestSkip{now_unix(), ctx.trigger, decision.reason, busy.busy, judge::to_json(busy)};
  st.selftest_runs["skipped"]++;
  log(ctx, busy.busy ? LogLevel::notice : LogLevel::info, "self-test skipped: " + decision.reason, "selftest");
  return false;
}

// Who else used the GPUs while the agent ran: its own NVML samples, else the device files' holders
// right after it (an agent without NVML cannot tell; the agent itself has exited by then).
judge::Contention contention_of(const judge::AgentRun& run, const SelftestSpec& spec, const sys::SysRoot& root) {
  judge::Contention c = run.result ? judge::contention_in(run.result->raw, spec.ignore_processes) : judge::Contention{};
  if (c.source == "nvml") { return c; }
  c.source = "device files";
  for (const auto& h : lifecycle::find_holders(root)) {
    if (std::find(spec.ignore_processes.begin(), spec.ignore_processes.end(), h.comm) != spec.ignore_processes.end()) {
      continue;
    }
    GpuUser u{"", h.pid, h.comm, 0, ""};
    for (const auto& f : h.files) { u.seen += (u.seen.empty() ? "" : " ") + f; }
    c.processes.push_back(std::move(u));
  }
  if (!c.processes.empty()) { c.seen_at.push_back("after"); }
  c.contended = !c.processes.empty();
  return c;
}

void run_selftest(const PassContext& ctx, const Profile& profile, const Inventory& inv, RecordedState& st) {
  const SelftestSpec spec = *profile.selftest;
  const std::string agent = host_paths(ctx.config, ctx.root).agent_path.string();
  const auto limit = ctx.config.selftest_time_limit.value_or(spec.time_limit);
  const std::vector<std::string> args = selftest_agent_args(ctx.config.agent_args, profile, ctx.root);
  log(ctx, LogLevel::info, "self-test: running " + agent + " (time limit " + format_duration(limit) + ")", "selftest");
  const judge::AgentRun run = run_agent(ctx, agent, args, limit, spec, inv);
  if (run.process.cancelled) {  // not a verdict on the box: keep the last result for the next start
    log(ctx, LogLevel::warning,
        "self-test " + run.process.describe() + " after " + std::to_string(static_cast<int>(run.duration_s)) +
            " s; the previous result is kept",
        "selftest");
    return;
  }
  const auto contention = contention_of(run, spec, ctx.root);
  const auto notes = record_selftest(st, run, spec, inv, ctx.trigger, contention);
  if (!notes.baseline_reset.empty()) {
    log(ctx, LogLevel::notice, "self-test baseline reset: " + notes.baseline_reset, "selftest");
  }
  if (notes.contended) {
    log(ctx, LogLevel::notice, "self-test contended: " + st.selftest_contended->reasons.front(), "selftest");
    return;
  }
  if (contention.contended) {  // judged all the same: a failure no job can cause
    log(ctx, LogLevel::warning,
        "self-test shared the GPUs (" + contention.describe() + ") and failed in a way no job causes", "selftest");
  }
  for (const auto& m : ctx.untrusted_memory) {
    st.selftest->reasons.push_back("integrity: its bytes were checked while the health pass found: " + m);
  }
  const SelftestRecord& rec = *st.selftest;
  const LogLevel level = rec.verdict == "passed"            ? LogLevel::info
                         : rec.verdict == "below_threshold" ? LogLevel::warning
                                                            : LogLevel::error;
  std::string msg = "self-test " + rec.verdict;
  for (const auto& r : rec.reasons) { msg += "; " + r; }
  log(ctx, level, msg, "selftest");
  for (const auto& w : rec.warnings) { log(ctx, LogLevel::warning, "self-test regression: " + w, "selftest"); }
  for (const auto& n : rec.notes) { log(ctx, LogLevel::info, "self-test note: " + n, "selftest"); }
}

// The GPU and then the host ring each paired drive's admin SQ tail doorbell. Not run
// when no profile drive on vfio-pci names a pair_gpu.
void run_nvme_doorbell(const PassContext& ctx, const Profile& profile, const Inventory& inv, RecordedState& st) {
  const auto t = judge::doorbell_targets(profile, probe::probe_nvme_identities(ctx.root));
  for (const auto& why : t.skipped) { log(ctx, LogLevel::warning, "NVMe doorbell: " + why, "selftest"); }
  if (t.targets.empty()) {
    st.nvme_doorbell.reset();  // nothing paired any more: no stale result, no stale metric
    return;
  }
  const SelftestSpec spec = *profile.selftest;
  const auto limit = ctx.config.selftest_time_limit.value_or(spec.time_limit);
  log(ctx, LogLevel::info,
      "NVMe doorbell test: " + std::to_string(t.targets.size()) + " drive(s), GPU and host writers", "selftest");
  std::vector<std::string> args = ctx.config.agent_args;
  for (auto& a : judge::doorbell_args(t.targets)) { args.push_back(std::move(a)); }
  const judge::AgentRun run =
      run_agent(ctx, host_paths(ctx.config, ctx.root).agent_path.string(), args, limit, spec, inv);
  if (run.process.cancelled) { return; }
  judge::DoorbellRecord rec = judge::judge_doorbell(run, t.targets);
  rec.trigger = ctx.trigger;
  for (const auto& l : judge::doorbell_lines(rec)) {
    log(ctx, rec.verdict == "failed" || rec.verdict == "error" ? LogLevel::error : LogLevel::info,
        "NVMe doorbell: " + l, "selftest");
  }
  st.nvme_doorbell = std::move(rec);
}
// A self-test that was asked for and cannot run on this node as it stands: recorded (GET
// /v1/selftest's skipped, what `selftest run --wait` prints) and logged with the reason.
void skip_selftest(const PassContext& ctx, RecordedState& st, const std::string& reason) {
  st.selftest_skipped = SelftestSkip{now_unix(), ctx.trigger, reason, false, nlohmann::json()};
  st.selftest_runs["skipped"]++;
  log(ctx, LogLevel::warning, "self-test skipped: " + reason, "selftest");
}

// 6. The self-test, when the platform is fit for one (and the remediation ladder's after a rung),
// then the ladder and what the results raise.
void selftest_step(const PassContext& ctx, const Profile* profile, Inventory& inv, std::vector<Finding>& findings,
                   RecordedState& st, Decision& d) {
  const bool platform_fit = severity_rank(d.state) <= severity_rank(NodeState::degraded);
  const auto selftest_now = [&](const Inventory& box) {
    if (!may_run_selftest(ctx, *profile->selftest, host_paths(ctx.config, ctx.root).agent_path.string(), st)) {
      return;
    }
    run_selftest(ctx, *profile, box, st);
    run_nvme_doorbell(ctx, *profile, box, st);
    // A fresh result may say more about the pairs than the last one (NVLink): show it.
    if (st.selftest && st.selftest->result.is_object()) {
      const bool had = !inv.interconnects.empty();
      judge::merge_interconnects(inv, st.selftest->result);
      if (had || !inv.interconnects.empty()) {
        findings = checks::run_all_checks(*profile, inv);
        st.findings = json::array();
        for (const auto& f : findings) { st.findings.push_back(to_json(f)); }
        st.findings_table = render::render_check_table(inv, profile->name, findings);
        record_inventory(st, inv, profile);
      }
    }
  };
  const bool ladder_wants = profile->remediation && remediation::wants_selftest(st.remediation, judged_selftests(st));
  if (ctx.want_selftest || ladder_wants) {
    if (!platform_fit) {
      skip_selftest(ctx, st,
                    std::string("the node is ") + to_string(d.state) +
                        (d.reasons.empty() ? std::string() : ": " + d.reasons.front()));
    } else {
      selftest_now(inv);
    }
  }
  // 6b. the remediation ladder, on a platform fit for its self-tests
  if (profile->remediation && platform_fit) {
    LadderHooks hooks{[&] {
                        Inventory box = discover(ctx);
                        probe::use_profile_signing(ctx.root, *profile, box);
                        probe::use_profile_tree(ctx.root, *profile, box);
                        if (st.selftest) { judge::merge_interconnects(box, st.selftest->result); }
                        record_inventory(st, box, profile);
                        return box;
                      },
                      selftest_now};
    for (auto& [state, reason] : run_ladder(ctx, *profile, inv, st, hooks)) { d.raise(state, std::move(reason)); }
  }
  // The self-test's figures beside their expectations, as one more finding (it decides nothing:
  // the verdict and the regressions below do).
  if (st.selftest && st.selftest->expectations.is_array() && !st.selftest->expectations.empty()) {
    findings.push_back(judge::bandwidth_finding(st.selftest->expectations, st.selftest->warnings));
    st.findings = json::array();
    for (const auto& f : findings) { st.findings.push_back(to_json(f)); }
    st.findings_table = render::render_check_table(inv, profile->name, findings);
  }
  if (st.nvme_doorbell && (st.nvme_doorbell->verdict == "failed" || st.nvme_doorbell->verdict == "error")) {
    for (const auto& r : st.nvme_doorbell->reasons) { d.raise(NodeState::failed, "NVMe doorbell: " + r); }
  }
  // Not yet tested because the GPUs were busy, or by policy, is no fault of the node: the skip
  // is in /v1/selftest and the stale-self-test alert watches how long it lasts.
  if (!st.selftest && !st.selftest_skipped && !st.selftest_contended) {
    d.raise(NodeState::degraded, "no self-test has run yet");
  } else if (st.selftest && (st.selftest->verdict == "error" || st.selftest->verdict == "failed")) {
    for (const auto& r : st.selftest->reasons) {
      d.raise(NodeState::failed, "self-test " + st.selftest->verdict + ": " + r);
    }
  } else if (st.selftest && st.selftest->verdict == "below_threshold") {
    for (const auto& r : st.selftest->reasons) { d.raise(NodeState::degraded, "self-test: " + r); }
  }
  if (st.selftest) {
    for (const auto& w : st.selftest->warnings) { d.raise(NodeState::degraded, "self-test regression: " + w); }
  }
}

// 1. The box as it is, with the driver's view of the pairs (NVLink) from the last self-test: NV<n>
// in check and topology.
Inventory pass_discover(const PassContext& ctx, const RecordedState& st) {
  log(ctx, LogLevel::info, "reconcile (" + ctx.trigger + "): discovering the box", "discover");
  Inventory inv = discover(ctx);
  if (st.selftest) { judge::merge_interconnects(inv, st.selftest->result); }
  for (const auto& p : inv.problems) { log(ctx, LogLevel::warning, "discovery: " + p, "discover"); }
  return inv;
}

// 2. The profile that matches this box, among those loaded; null (and the node failed) when none does.
const Profile* pass_choose_profile(const PassContext& ctx, const profile::DirLoadResult& loaded, const Inventory& inv,
                                   Decision& d) {
  for (const auto& f : loaded.failures) {
    log(ctx, LogLevel::warning, "skipping an invalid profile: " + f.format(), "profile");
  }
  if (!loaded.error.empty()) {
    d.raise(NodeState::failed, "profiles: " + loaded.error);
  } else if (auto chosen = profile::select_profile(loaded.profiles, inv); !chosen) {
    d.raise(NodeState::failed, "no profile applies to this box: " + chosen.error().message);
  } else {
    return *chosen;
  }
  return nullptr;
}

// No profile: nothing to check, plan or test; the state says so.
void pass_without_profile(const PassContext& ctx, const Inventory& inv, RecordedState& st, const Decision& d) {
  for (const auto& r : d.reasons) { log(ctx, LogLevel::error, r, "profile"); }
  if (ctx.want_selftest) { skip_selftest(ctx, st, d.reasons.front()); }
  st.profile.clear();
  st.findings = json::array();
  st.plan = json::object({{"steps", json::array()}, {"reboot_required", false}, {"needs_operator", false}});
  st.findings_table = "p2pnode: no profile applies to this box\n";
  record_inventory(st, inv, nullptr);
}

// What the state keeps of the profile: its name, its remediation, its self-test schedule.
void pass_adopt_profile(const Profile& profile, RecordedState& st) {
  st.profile = profile.name;
  st.profile_remediation = profile.remediation.has_value();
  // selftest.when never: no schedule (a forced request still runs one).
  if (profile.selftest && profile.selftest->when != SelftestWhen::never) {
    st.profile_selftest_schedule = profile.selftest->schedule;
    st.profile_selftest_retry = profile.selftest->retry_busy;
  }
}

// 5. Apply the plan, then check and plan again against a fresh look at the box.
void pass_apply(const PassContext& ctx, const Profile& profile, Inventory& inv, std::vector<Finding>& findings,
                Plan& plan, RecordedState& st, Decision& d) {
  log(ctx, LogLevel::notice, "applying " + std::to_string(plan.steps.size()) + " step(s)", "apply");
  actions::ApplyContext actx{ctx.root, ctx.action_runner, profile};
  actx.log = [&](std::string_view action, std::string_view subject, std::string_view line) {
    log(ctx, LogLevel::info, std::string(line), std::string(action), std::string(subject));
  };
  const auto results = actions::apply_all(actx);
  for (const auto& r : results) {
    st.applied.push_back(to_json(r));
    const bool bad = r.outcome == StepOutcome::failed || r.outcome == StepOutcome::refused;
    log(ctx, bad ? LogLevel::error : LogLevel::notice, std::string(to_string(r.outcome)) + ": " + r.message, r.action,
        r.subject);
    if (bad) { d.raise(NodeState::failed, "apply " + r.action + " " + r.subject + ": " + r.message); }
    if (r.outcome == StepOutcome::reboot_required) {
      d.raise(NodeState::reboot_required, r.action + " " + r.subject + ": takes effect after a reboot");
    }
  }
  inv = discover(ctx);
  probe::use_profile_signing(ctx.root, profile, inv);
  probe::use_profile_tree(ctx.root, profile, inv);
  if (st.selftest) { judge::merge_interconnects(inv, st.selftest->result); }
  findings = checks::run_all_checks(profile, inv);
  plan = actions::plan_all(profile, inv, ctx.root);
}

// What is left to do after apply, and what the checks still find, raised into the decision.
void pass_raise_open_work(const PassContext& ctx, const Plan& plan, const std::vector<Finding>& findings, Decision& d) {
  for (const auto& s : plan.steps) {
    if (s.needs_operator) {
      d.raise(NodeState::blocked, s.action + " " + s.subject + ": " + s.description);
    } else if (s.reboot_required) {
      d.raise(NodeState::reboot_required, s.action + " " + s.subject + ": " + s.description);
    } else if (!ctx.config.apply) {
      d.raise(NodeState::degraded, "not applied (apply: false): " + s.action + " " + s.subject + ": " + s.description);
    } else {
      d.raise(NodeState::failed, "still planned after apply: " + s.action + " " + s.subject + ": " + s.description);
    }
  }
  for (const auto& f : findings) {
    if (f.severity == Severity::ok) { continue; }
    const bool error = f.severity == Severity::error;
    log(ctx, error ? LogLevel::error : LogLevel::warning, f.summary, "check", f.subject, f.check);
    // An error no step of the plan closes needs a person; a warning degrades the node.
    bool planned = false;
    for (const auto& s : plan.steps) { planned |= s.subject == f.subject && !s.needs_operator; }
    if (!planned) {
      d.raise(error ? NodeState::blocked : NodeState::degraded, f.check + " " + f.subject + ": " + f.summary);
    }
  }
}

// 3.-6. With a profile: check, plan, apply and verify, record, then the self-test.
void pass_with_profile(const PassContext& ctx, const Profile* profile, Inventory& inv, RecordedState& st, Decision& d) {
  pass_adopt_profile(*profile, st);
  probe::use_profile_signing(ctx.root, *profile, inv);  // the key the profile signs with, if it names one
  probe::use_profile_tree(ctx.root, *profile, inv);
  // 3. check, 4. plan
  auto findings = checks::run_all_checks(*profile, inv);
  Plan plan = actions::plan_all(*profile, inv, ctx.root);
  bool actionable = false;
  for (const auto& s : plan.steps) { actionable |= !s.needs_operator; }
  // 5. apply, then verify against a fresh look at the box
  if (actionable && ctx.config.apply) { pass_apply(ctx, *profile, inv, findings, plan, st, d); }
  pass_raise_open_work(ctx, plan, findings, d);
  st.findings = json::array();
  for (const auto& f : findings) { st.findings.push_back(to_json(f)); }
  st.plan = to_json(plan);
  st.findings_table = render::render_check_table(inv, profile->name, findings);
  record_inventory(st, inv, profile);

  // 6. self-test, when the platform is fit for one (and the remediation ladder's after a rung)
  if (profile->selftest) { selftest_step(ctx, profile, inv, findings, st, d); }
}

// 7. The decision into the state, counted and logged.
void pass_decide(const PassContext& ctx, const Decision& d, std::chrono::steady_clock::time_point t0,
                 RecordedState& st) {
  st.state = d.state;
  st.reasons = d.reasons;
  st.reconciled_unix = now_unix();
  st.reconcile_duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  st.reconcile_runs[to_string(st.state)]++;
  log(ctx, st.state == NodeState::ready ? LogLevel::notice : LogLevel::warning,
      std::string("reconcile done: node ") + to_string(st.state) +
          (d.reasons.empty() ? "" : " (" + std::to_string(d.reasons.size()) + " reason(s): " + d.reasons.front() + ")"),
      "record");
}

}  // namespace

std::optional<std::chrono::nanoseconds> selftest_interval(const DaemonConfig& c, const RecordedState& s) {
  if (!s.profile_selftest_schedule) {
    return std::nullopt;  // the profile asks for no self-test
  }
  return c.selftest_schedule ? c.selftest_schedule : s.profile_selftest_schedule;
}

void reconcile_pass(const PassContext& ctx, RecordedState& st) {
  const auto t0 = std::chrono::steady_clock::now();
  Decision d;
  st.trigger = ctx.trigger;
  st.applied = json::array();
  st.profile_selftest_schedule.reset();
  st.profile_selftest_retry.reset();
  st.profile_remediation = false;

  // 1. discover
  Inventory inv = pass_discover(ctx, st);
  // 2. the profile that matches this box
  const auto loaded = profile::load_profiles_dir(host_paths(ctx.config, ctx.root).profiles_dir);
  const Profile* profile = pass_choose_profile(ctx, loaded, inv, d);
  // 3. check, 4. plan, 5. apply, 6. self-test
  if (!profile) {
    pass_without_profile(ctx, inv, st, d);
  } else {
    pass_with_profile(ctx, profile, inv, st, d);
  }
  // 7. decide and count
  pass_decide(ctx, d, t0, st);
}

}  // namespace p2pnode::engine
