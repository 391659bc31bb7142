// engine/selftest: recording a run that shared the GPUs with another process. It is kept apart
// (selftest_contended, verdict contended) and leaves the judged run, the baseline, the last success
// and readiness as they were; a contended run that corrupted data judges the node all the same.
#include "engine/selftest.hpp"

#include <gtest/gtest.h>

#include "engine/metrics.hpp"
#include "engine/views.hpp"
#include "probe/probe.hpp"
#include "unit/fixture_inventory.hpp"
#include "unit/source_files.hpp"

using namespace p2pnode;
using namespace p2pnode::engine;
using nlohmann::json;

namespace {
using namespace p2pnode::test_files;

// The real NV18 run, its CE write 0->1 scaled by `factor` (0.54: what a copy job beside it left).
judge::AgentRun run(double factor, const json& contention, std::uint64_t bad_bytes = 0) {
  json d = p2pnode::test_files::nv18_run(factor);
  if (!contention.is_null()) { d["contention"] = contention; }
  if (bad_bytes) { d["summary"]["integrity_bad_bytes"] = bad_bytes; }
  auto r = judge::parse_agent_result(d.dump());
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  SelftestSpec spec;
  judge::AgentRun a;
  a.judgement = judge::judge_agent_result(*r, spec, h200());
  a.result = *r;
  a.started_unix = 1700000000;
  return a;
}

json copy_job_seen() {
  const json p =
      json::array({{{"gpu", "0000:00:06.0"}, {"pid", 4242}, {"name", "copy_load"}, {"used_memory_bytes", 1073741824}}});
  return {{"source", "nvml"}, {"reason", nullptr}, {"before", p}, {"after", p}};
}
}  // namespace

TEST(ContendedRun, IsReportedButJudgesNothing) {
  SelftestSpec spec;
  RecordedState st;
  for (int i = 0; i < 3; ++i) { record_selftest(st, run(1.0, json()), spec, h200(), "schedule"); }
  ASSERT_EQ(st.selftest->verdict, "passed");
  const json baselines_before = to_json(st.baselines);
  const auto last_success = st.selftest_last_success_unix;

  auto shared = run(0.54, copy_job_seen());
  shared.started_unix = 1700003600;
  ASSERT_EQ(shared.judgement.verdict, "below_threshold");  // what the judge alone would say
  const auto contention = judge::contention_in(shared.result->raw, spec.ignore_processes);
  const auto notes = record_selftest(st, shared, spec, h200(), "schedule", contention);
  EXPECT_TRUE(notes.contended);
  // The judged run, the baseline and the last success are untouched.
  EXPECT_EQ(st.selftest->verdict, "passed");
  EXPECT_EQ(st.selftest->started_unix, 1700000000);
  EXPECT_EQ(to_json(st.baselines), baselines_before);
  EXPECT_EQ(st.selftest_last_success_unix, last_success);
  ASSERT_TRUE(st.selftest_contended);
  EXPECT_EQ(st.selftest_contended->verdict, "contended");
  EXPECT_EQ(st.selftest_contended->reasons[0].rfind("another process used the GPUs during the run (pid 4242 "
                                                    "(copy_load, 1 GiB) on 0000:00:06.0; seen before, after)",
                                                    0),
            0u)
      << st.selftest_contended->reasons[0];
  EXPECT_NE(st.selftest_contended->reasons[1].find("not judged: ce_write_bandwidth"), std::string::npos)
      << st.selftest_contended->reasons[1];
  EXPECT_EQ(st.selftest_runs["contended"], 1u);

  // The API and metrics say so.
  const json body = selftest_body(st);
  EXPECT_EQ(body["verdict"], "passed");
  EXPECT_EQ(body["contended_run"]["verdict"], "contended");
  EXPECT_EQ(body["contended_run"]["contention"]["processes"][0]["pid"], 4242);
  EXPECT_FALSE(body["contended_run"].contains("result"));
  const std::string m = render_metrics(st, Runtime{});
  EXPECT_NE(m.find("p2pnode_selftest_contended 1"), std::string::npos);
  EXPECT_NE(m.find("p2pnode_selftest_other_processes 1"), std::string::npos);
  EXPECT_NE(m.find("p2pnode_selftest_runs_total{result=\"contended\"} 1"), std::string::npos);

  // The state file keeps it.
  auto back = state_from_json(json::parse(to_json(st).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->selftest_contended->verdict, "contended");

  // After the job: a run that passes against the baseline built before it, and the note is gone.
  auto after =
      run(1.0, json{{"source", "nvml"}, {"reason", nullptr}, {"before", json::array()}, {"after", json::array()}});
  after.started_unix = 1700007200;
  record_selftest(st, after, spec, h200(), "schedule", judge::contention_in(after.result->raw, {}));
  EXPECT_EQ(st.selftest->verdict, "passed");
  EXPECT_TRUE(st.selftest->warnings.empty());
  EXPECT_TRUE(selftest_body(st)["contended_run"].is_null());
  EXPECT_NE(render_metrics(st, Runtime{}).find("p2pnode_selftest_contended 0"), std::string::npos);
}

TEST(ContendedRun, AJudgedRunInTheSameSecondSupersedesIt) {
  SelftestSpec spec;
  RecordedState st;
  auto shared = run(0.54, copy_job_seen());
  record_selftest(st, shared, spec, h200(), "api-selftest",
                  judge::contention_in(shared.result->raw, spec.ignore_processes));
  ASSERT_TRUE(st.selftest_contended);
  auto after =
      run(1.0, json{{"source", "nvml"}, {"reason", nullptr}, {"before", json::array()}, {"after", json::array()}});
  ASSERT_EQ(after.started_unix, shared.started_unix);  // both started in the same second
  record_selftest(st, after, spec, h200(), "api-selftest", judge::contention_in(after.result->raw, {}));
  EXPECT_FALSE(st.selftest_contended);
  EXPECT_TRUE(selftest_body(st)["contended_run"].is_null());
  EXPECT_NE(render_metrics(st, Runtime{}).find("p2pnode_selftest_contended 0"), std::string::npos);
}

TEST(ContendedRun, CorruptedBytesJudgeTheNodeAllTheSame) {
  SelftestSpec spec;
  RecordedState st;
  auto shared = run(0.54, copy_job_seen(), 4096);
  ASSERT_EQ(shared.judgement.verdict, "failed");
  ASSERT_TRUE(shared.judgement.load_independent_failure);
  const auto notes =
      record_selftest(st, shared, spec, h200(), "schedule", judge::contention_in(shared.result->raw, {}));
  EXPECT_FALSE(notes.contended);
  ASSERT_TRUE(st.selftest);
  EXPECT_EQ(st.selftest->verdict, "failed");
  EXPECT_TRUE(st.selftest->contention["contended"].get<bool>());
  EXPECT_TRUE(st.baselines.history.empty());  // a shared run's figures never enter the baseline
}
