// The remediation ladder's decisions, pass by pass: rungs in order, each only when what it needs
// holds (idle GPUs, a drained node, the reboot window), a self-test after every rung, ready again only
// when one passes, and a record that resumes after a crash without taking a rung twice.
#include "remediation/ladder.hpp"

#include <gtest/gtest.h>

#include "profile/loader.hpp"
#include "remediation/record_json.hpp"

using namespace p2pnode;
using namespace p2pnode::remediation;

namespace {
RemediationSpec full() {
  RemediationSpec s;
  s.rungs = {Rung::wait_idle, Rung::reset_gpu, Rung::reload_module, Rung::reboot};
  return s;
}
LadderInputs lost(std::int64_t now, bool idle = true, bool drained = false) {
  LadderInputs in;
  in.lost_p2p = "health.p2p_status 0000:03:00.0: the driver no longer allows P2P to 0000:04:00.0";
  in.now_unix = now;
  in.gpus_idle = idle;
  in.drained = drained;
  return in;
}
// The inputs after `judged` self-tests in all, the last one passed or not.
LadderInputs tested(LadderInputs in, std::uint64_t judged, bool passed) {
  in.selftests = judged;
  in.selftest_passed = passed;
  return in;
}
}  // namespace

TEST(Ladder, NothingLostNothingDone) {
  const auto s = decide_ladder({}, full(), LadderInputs{});
  EXPECT_EQ(s.decision.action, LadderAction::none);
  EXPECT_FALSE(s.record.active);
}

TEST(Ladder, EveryRungInOrderEachFollowedByASelfTestThenAPerson) {
  const auto spec = full();
  auto s = decide_ladder({}, spec, lost(1000));
  ASSERT_EQ(s.decision.action, LadderAction::take);
  EXPECT_EQ(*s.decision.rung, Rung::wait_idle);
  EXPECT_TRUE(wants_selftest(s.record, 0));
  // No self-test since: the ladder waits for one, and takes nothing else.
  s = decide_ladder(s.record, spec, lost(1010));
  EXPECT_EQ(s.decision.action, LadderAction::wait);
  EXPECT_EQ(s.decision.why, "a self-test follows wait_idle");
  // It failed: the next rung.
  s = decide_ladder(s.record, spec, tested(lost(1100), 1050, false));
  ASSERT_EQ(s.decision.action, LadderAction::take);
  EXPECT_EQ(*s.decision.rung, Rung::reset_gpu);
  s = decide_ladder(s.record, spec, tested(lost(1300), 1200, false));
  ASSERT_EQ(s.decision.action, LadderAction::take);
  EXPECT_EQ(*s.decision.rung, Rung::reload_module);
  // The reboot needs a drained node: idle GPUs are not enough.
  s = decide_ladder(s.record, spec, tested(lost(1500, true, false), 1400, false));
  EXPECT_EQ(s.decision.action, LadderAction::wait);
  EXPECT_EQ(s.decision.why, "reboot waits for a drained node (never while a job runs)");
  s = decide_ladder(s.record, spec, tested(lost(1600, true, true), 1400, false));
  ASSERT_EQ(s.decision.action, LadderAction::take);
  EXPECT_EQ(*s.decision.rung, Rung::reboot);
  EXPECT_EQ(s.record.last_reboot_unix, 1600);
  s = decide_ladder(s.record, spec, tested(lost(1900, true, true), 1800, false));
  EXPECT_EQ(s.decision.action, LadderAction::service_required);
  EXPECT_NE(s.decision.why.find("every rung the profile allows was taken"), std::string::npos) << s.decision.why;
  EXPECT_FALSE(wants_selftest(s.record, 1800));
  // It stays so until a self-test passes with nothing lost.
  EXPECT_EQ(decide_ladder(s.record, spec, tested(lost(2000), 1800, false)).decision.action,
            LadderAction::service_required);
  LadderInputs fine = tested(LadderInputs{}, 2100, true);
  fine.now_unix = 2200;
  s = decide_ladder(s.record, spec, fine);
  EXPECT_EQ(s.decision.action, LadderAction::recovered);
  EXPECT_FALSE(s.record.active);
  EXPECT_EQ(s.record.last_reboot_unix, 1600);  // the window outlives the ladder
}

TEST(Ladder, RecoveredOnlyByASelfTestThatPassedAfterTheRung) {
  auto spec = full();
  spec.rungs = {Rung::reload_module};
  auto s = decide_ladder({}, spec, tested(lost(1000), 5, false));  // the fifth self-test failed
  ASSERT_EQ(*s.decision.rung, Rung::reload_module);
  // The health finding cleared, but no self-test since: not ready.
  LadderInputs quiet = tested(LadderInputs{}, 5, false);
  quiet.now_unix = 1010;
  EXPECT_EQ(decide_ladder(s.record, spec, quiet).decision.action, LadderAction::wait);
  EXPECT_TRUE(wants_selftest(s.record, 5));
  // The sixth, after the rung (in the same second or not), decides.
  EXPECT_EQ(decide_ladder(s.record, spec, tested(quiet, 6, true)).decision.action, LadderAction::recovered);
  EXPECT_FALSE(wants_selftest(s.record, 6));
}

TEST(Ladder, NeverWhileAJobRunsAndAWaitIsBounded) {
  RemediationSpec spec;
  spec.rungs = {Rung::reset_gpu};
  spec.idle_wait = std::chrono::hours(2);
  auto s = decide_ladder({}, spec, lost(1000, false));
  EXPECT_EQ(s.decision.action, LadderAction::wait);
  EXPECT_EQ(s.decision.why, "reset_gpu waits for idle GPUs (never while a job runs)");
  s = decide_ladder(s.record, spec, lost(1000 + 3600, false));
  EXPECT_EQ(s.decision.action, LadderAction::wait);
  s = decide_ladder(s.record, spec, lost(1000 + 7200, false));
  EXPECT_EQ(s.decision.action, LadderAction::service_required);
  EXPECT_EQ(s.decision.why, "waited 2 h to reset_gpu: the GPUs stayed busy");
}

TEST(Ladder, AtMostOneRebootInTheWindow) {
  RemediationSpec spec;
  spec.rungs = {Rung::reboot};
  LadderRecord before;
  before.last_reboot_unix = 10000;  // a reboot by an earlier ladder, 5 hours before this one
  const auto s = decide_ladder(before, spec, lost(10000 + 5 * 3600, true, true));
  EXPECT_EQ(s.decision.action, LadderAction::service_required);
  EXPECT_EQ(s.decision.why, "a reboot 5 h ago did not bring P2P back, and the profile allows one in 24 h");
  EXPECT_EQ(decide_ladder(before, spec, lost(10000 + 25 * 3600, true, true)).decision.action, LadderAction::take);
}

// A crash or a power cut during a rung: the record was advanced before it ran, so the pass after the
// restart waits for the self-test and never takes the same rung again.
TEST(Ladder, ARestartMidRungResumesWithoutTakingItTwice) {
  auto spec = full();
  spec.rungs = {Rung::reload_module, Rung::reboot};
  auto s = decide_ladder({}, spec, lost(1000));
  ASSERT_EQ(*s.decision.rung, Rung::reload_module);
  const LadderRecord persisted = s.record;  // what the state file holds when the power goes
  s = decide_ladder(persisted, spec, lost(1300));
  EXPECT_EQ(s.decision.action, LadderAction::wait);
  EXPECT_EQ(s.record.next, 1u);
  s = decide_ladder(persisted, spec, tested(lost(1400, true, true), 1350, false));
  ASSERT_EQ(s.decision.action, LadderAction::take);
  EXPECT_EQ(*s.decision.rung, Rung::reboot);  // the next rung, not reload again
}

TEST(Ladder, AHealthPassAfterTheRungMustNoLongerReportTheLoss) {
  RemediationSpec spec;
  spec.rungs = {Rung::reset_gpu, Rung::reboot};
  LadderInputs in = lost(1000);
  in.health_watching = true;
  in.health_read_unix = 990;
  auto s = decide_ladder({}, spec, in);
  ASSERT_EQ(*s.decision.rung, Rung::reset_gpu);
  // The self-test after the reset passed, the health pass has not read the box since: its loss is stale.
  in = tested(lost(1100), 1050, true);
  in.health_watching = true;
  in.health_read_unix = 995;
  s = decide_ladder(s.record, spec, in);
  EXPECT_EQ(s.decision.action, LadderAction::wait);
  EXPECT_EQ(s.decision.why, "a health pass follows reset_gpu");
  // A fresh health pass still reports it: the next rung.
  in.health_read_unix = 1090;
  in.drained = true;
  s = decide_ladder(s.record, spec, in);
  ASSERT_EQ(s.decision.action, LadderAction::take);
  EXPECT_EQ(*s.decision.rung, Rung::reboot);
  // What each rung saw before and what the self-test after it said.
  ASSERT_EQ(s.record.history.size(), 2u);
  EXPECT_EQ(s.record.history[0].rung, Rung::reset_gpu);
  EXPECT_EQ(s.record.history[0].before, lost(0).lost_p2p.value());
  EXPECT_EQ(s.record.history[0].after, "passed");
  EXPECT_EQ(s.record.history[1].after, "");
  // After the reboot: a passing self-test and a health pass that reads nothing lost.
  in = tested(LadderInputs{}, 1300, true);
  in.selftest_said = "passed";
  in.now_unix = 1400;
  in.health_watching = true;
  in.health_read_unix = 1350;
  s = decide_ladder(s.record, spec, in);
  EXPECT_EQ(s.decision.action, LadderAction::recovered);
  EXPECT_EQ(s.decision.why, "a self-test passed after reboot");
  ASSERT_EQ(s.record.history.size(), 2u);  // kept for /v1/status after the ladder ends
  EXPECT_EQ(s.record.history[1].after, "passed");
}

TEST(Ladder, TheHistoryIsBounded) {
  RemediationSpec spec;
  spec.rungs = {Rung::wait_idle};
  LadderRecord r;
  for (int i = 0; i < 40; ++i) {
    auto s = decide_ladder(r, spec, lost(1000 + i * 100));  // a ladder, then a person, then recovered, again
    s = decide_ladder(s.record, spec, tested(LadderInputs{}, 1000 + i * 100 + 10, true));
    r = s.record;
  }
  EXPECT_EQ(r.history.size(), kRungHistory);
}

TEST(Ladder, TheProfileNamesTheRungsInLadderOrder) {
  const std::string head = "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata: {name: ladder}\nselftest: {}\n";
  auto r = profile::load_profile_text(
      head + "remediation:\n  rungs: [wait_idle, reset_gpu, reboot]\n  reboot_window: 12h\n", "ladder.yaml");
  ASSERT_TRUE(r.profile) << r.diagnostics.format();
  EXPECT_EQ(r.profile->remediation->rungs, (std::vector<Rung>{Rung::wait_idle, Rung::reset_gpu, Rung::reboot}));
  EXPECT_EQ(r.profile->remediation->reboot_window, std::chrono::hours(12));
  r = profile::load_profile_text(head + "remediation:\n  rungs: [reboot, wait_idle]\n", "ladder.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_EQ(r.diagnostics.list().front().format(),
            "ladder.yaml:6:19: remediation.rungs[1]: expected the rungs in ladder order (wait_idle, reset_gpu, "
            "reload_module, reboot), each once; 'wait_idle' comes too late");
  r = profile::load_profile_text(head + "remediation:\n  rungs: [reflash]\n", "ladder.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_NE(r.diagnostics.format().find("expected one of wait_idle, reset_gpu, reload_module, reboot, found 'reflash'"),
            std::string::npos);
  // reload_module reloads the profile's driver; a ladder without a self-test could never end.
  r = profile::load_profile_text(head + "remediation:\n  rungs: [reload_module]\n", "ladder.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_NE(r.diagnostics.format().find("remediation.rungs: expected a driver: section for reload_module"),
            std::string::npos)
      << r.diagnostics.format();
  r = profile::load_profile_text(
      "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata: {name: ladder}\n"
      "remediation:\n  rungs: [wait_idle]\n",
      "ladder.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_NE(r.diagnostics.format().find("remediation: expected a selftest: section beside remediation:"),
            std::string::npos)
      << r.diagnostics.format();
  r = profile::load_profile_text(head + "remediation:\n  rungs: [reboot]\n  reboot_window: 10m\n", "ladder.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_NE(r.diagnostics.format().find("remediation.reboot_window: expected at least 1h"), std::string::npos);
  EXPECT_FALSE(profile::load_profile_text(head, "ladder.yaml").profile->remediation);  // off unless asked for
}

// The record in the state file: written whole, read back the same, a bad field named.
TEST(Ladder, TheRecordRoundTripsAndABadFieldIsNamed) {
  auto s = decide_ladder({}, full(), lost(1000));
  s = decide_ladder(s.record, full(), tested(lost(1100), 1, false));
  const auto j = to_json(s.record);
  auto back = ladder_record_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(to_json(*back), j);
  auto bad = j;
  bad["taken"] = "reflash";
  EXPECT_EQ(ladder_record_from_json(bad).error().message, "remediation: 'taken' is 'reflash', expected a rung");
  bad = j;
  bad["history"][0]["taken_unix"] = "soon";
  EXPECT_EQ(ladder_record_from_json(bad).error().message,
            "remediation: 'history[0].taken_unix' is string, expected an integer");
  bad = j;
  bad["next"] = 9;
  EXPECT_EQ(ladder_record_from_json(bad).error().message, "remediation: 'next' is 9, expected 0 to 4");
}
