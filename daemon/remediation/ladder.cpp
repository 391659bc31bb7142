#include "remediation/ladder.hpp"

#include <chrono>

#include "core/units.hpp"

namespace p2pnode::remediation {

const char* to_string(LadderAction a) {
  switch (a) {
    case LadderAction::none: return "none";
    case LadderAction::wait: return "wait";
    case LadderAction::take: return "take";
    case LadderAction::recovered: return "recovered";
    case LadderAction::service_required: break;
  }
  return "service_required";
}

namespace {

std::int64_t seconds(std::chrono::nanoseconds d) { return std::chrono::duration_cast<std::chrono::seconds>(d).count(); }

LadderStep stop_for_a_person(LadderRecord r, std::string why) {
  r.service_required = true;
  r.why = why;
  return {{LadderAction::service_required, std::nullopt, std::move(why)}, std::move(r)};
}

LadderStep wait(LadderRecord r, std::int64_t now, std::string why) {
  if (r.waiting_since_unix == 0) { r.waiting_since_unix = now; }
  r.why = why;
  return {{LadderAction::wait, std::nullopt, std::move(why)}, std::move(r)};
}

// The next allowed rung, taken when what it needs holds; else a wait, bounded by idle_wait.
LadderStep climb(LadderRecord r, const RemediationSpec& spec, const LadderInputs& in) {
  if (r.next >= spec.rungs.size()) {
    return stop_for_a_person(std::move(r),
                             "every rung the profile allows was taken and P2P is still lost (" + r.trigger + ")");
  }
  const Rung rung = spec.rungs[r.next];
  const bool needs_drained = rung == Rung::reboot;
  const bool ready = needs_drained ? in.drained : (in.gpus_idle || in.drained);
  if (rung == Rung::reboot && r.last_reboot_unix > 0 &&
      in.now_unix - r.last_reboot_unix < seconds(spec.reboot_window)) {
    return stop_for_a_person(std::move(r), "a reboot " +
                                               format_duration(std::chrono::seconds(in.now_unix - r.last_reboot_unix)) +
                                               " ago did not bring P2P back, and the profile allows one in " +
                                               format_duration(spec.reboot_window));
  }
  if (!ready) {
    if (r.waiting_since_unix > 0 && in.now_unix - r.waiting_since_unix >= seconds(spec.idle_wait)) {
      return stop_for_a_person(
          std::move(r), std::string("waited ") + format_duration(spec.idle_wait) + " to " + to_string(rung) + ": " +
                            (needs_drained ? "the node was never drained" : "the GPUs stayed busy"));
    }
    return wait(std::move(r), in.now_unix,
                std::string(to_string(rung)) + " waits for " + (needs_drained ? "a drained node" : "idle GPUs") +
                    " (never while a job runs)");
  }
  r.taken = rung;
  r.taken_unix = in.now_unix;
  r.selftests_at = in.selftests;
  r.history.push_back({rung, in.now_unix, in.lost_p2p.value_or(r.trigger), "", "taken"});
  if (r.history.size() > kRungHistory) { r.history.erase(r.history.begin()); }
  r.waiting_since_unix = 0;
  ++r.next;
  if (rung == Rung::reboot) { r.last_reboot_unix = in.now_unix; }
  r.why = std::string("taking ") + to_string(rung) + " (" + r.trigger + ")";
  return {{LadderAction::take, rung, r.why}, std::move(r)};
}

}  // namespace

LadderStep decide_ladder(LadderRecord r, const RemediationSpec& spec, const LadderInputs& in) {
  if (!r.active) {
    if (!in.lost_p2p) { return {{LadderAction::none, std::nullopt, ""}, std::move(r)}; }
    LadderRecord fresh;
    fresh.active = true;
    fresh.trigger = *in.lost_p2p;
    fresh.started_unix = in.now_unix;
    fresh.selftests_at = in.selftests;
    fresh.last_reboot_unix = r.last_reboot_unix;  // the reboot window outlives the ladder before
    fresh.history = std::move(r.history);
    return climb(std::move(fresh), spec, in);
  }
  const std::int64_t since = r.taken ? r.taken_unix : r.started_unix;
  const bool tested_after = in.selftests > r.selftests_at;
  // What the self-test after the rung said, kept beside it.
  if (r.taken && tested_after && !r.history.empty() && r.history.back().taken_unix == r.taken_unix &&
      r.history.back().after.empty()) {
    r.history.back().after = in.selftest_said.empty() ? (in.selftest_passed ? "passed" : "failed") : in.selftest_said;
  }
  // Strictly later: a health pass in the same second as the rung may have read the box before it.
  const bool health_after = !in.health_watching || in.health_read_unix > since;
  // Ready again only on a self-test that passed after the last rung, with nothing lost.
  if (tested_after && in.selftest_passed && !in.lost_p2p && health_after) {
    const std::string why =
        r.taken ? std::string("a self-test passed after ") + to_string(*r.taken) : "a self-test passed";
    LadderRecord done;
    done.last_reboot_unix = r.last_reboot_unix;
    done.history = std::move(r.history);
    done.why = why;
    return {{LadderAction::recovered, std::nullopt, why}, std::move(done)};
  }
  if (r.service_required) { return {{LadderAction::service_required, std::nullopt, r.why}, std::move(r)}; }
  if (r.taken) {
    if (!tested_after) {
      return {{LadderAction::wait, std::nullopt, std::string("a self-test follows ") + to_string(*r.taken)},
              std::move(r)};
    }
    if (in.selftest_passed && !health_after) {  // passed; the health pass has not read the box since the rung
      return {{LadderAction::wait, std::nullopt, std::string("a health pass follows ") + to_string(*r.taken)},
              std::move(r)};
    }
    r.taken.reset();  // the self-test after it failed, or P2P is still lost: the next rung
  } else if (!in.lost_p2p && !tested_after) {
    return {{LadderAction::wait, std::nullopt, "P2P is no longer reported lost: a self-test decides"}, std::move(r)};
  }
  return climb(std::move(r), spec, in);
}

bool wants_selftest(const LadderRecord& r, std::uint64_t selftests) {
  return r.active && !r.service_required && selftests <= r.selftests_at;
}

}  // namespace p2pnode::remediation
