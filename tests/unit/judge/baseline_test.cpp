// The node's own history: the baseline is the median of the last runs, robust to one bad run,
// kept in the state file, started over when the hardware or driver changes; a drop below it is a
// warning naming both figures, even above the threshold. Then the metrics that show all of it.
#include "judge/baseline.hpp"
#include "judge/bandwidth_finding.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/metrics.hpp"
#include "engine/selftest.hpp"
#include "engine/state.hpp"
#include "engine/views.hpp"
#include "probe/probe.hpp"
#include "unit/fixture_inventory.hpp"
#include "unit/source_files.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;
using namespace p2pnode::judge;
using namespace p2pnode::engine;
using nlohmann::json;

namespace {
using namespace p2pnode::test_files;
std::string run_scaled(double factor) { return p2pnode::test_files::nv18_run(factor).dump(); }
AgentRun judged(const std::string& doc, const SelftestSpec& spec) {
  AgentRun run;
  auto r = parse_agent_result(doc);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  run.judgement = judge_agent_result(*r, spec, h200());
  run.result = *r;
  run.started_unix = 1700000000;
  return run;
}
CellExpectation cell(const std::string& peer, double gbps) {
  CellExpectation c;
  c.case_key = "ce_write_bandwidth";
  c.gpu = "0000:00:06.0";
  c.peer_gpu = peer;
  c.link = "NV18";
  c.measured_gbps = gbps;
  return c;
}
}  // namespace

TEST(Baseline, MedianOfTheLastRunsIgnoresOneBadRun) {
  Baselines b;
  for (double v : {396.0, 396.4, 120.0, 396.2}) { update_baselines(b, "hw", {cell("0000:00:07.0", v)}, 0.10, 5); }
  const std::string key = cell("0000:00:07.0", 0).key();
  ASSERT_TRUE(b.baseline(key));
  EXPECT_NEAR(*b.baseline(key), 396.1, 1e-9);  // median of 396.0 396.4 120 396.2
  // Kept: the last 5 only.
  for (int i = 0; i < 10; ++i) { update_baselines(b, "hw", {cell("0000:00:07.0", 300 + i)}, 0.10, 5); }
  EXPECT_EQ(b.history[key].size(), 5u);
  EXPECT_EQ(b.history[key].front(), 305);
}

TEST(Baseline, NoVerdictBeforeThreeRunsAndADropIsARegression) {
  Baselines b;
  auto u = update_baselines(b, "hw", {cell("p", 100)}, 0.10, 5);
  u = update_baselines(b, "hw", {cell("p", 50)}, 0.10, 5);
  EXPECT_TRUE(u.regressions.empty());  // 1 run is no baseline
  u = update_baselines(b, "hw", {cell("p", 100)}, 0.10, 5);
  u = update_baselines(b, "hw", {cell("p", 91)}, 0.10, 5);  // 9 % below the median 100
  EXPECT_TRUE(u.regressions.empty());
  u = update_baselines(b, "hw", {cell("p", 85)}, 0.10, 5);
  ASSERT_EQ(u.regressions.size(), 1u);
  EXPECT_EQ(u.regressions[0].describe(),
            "ce_write_bandwidth 0000:00:06.0->p (NV18): 85.0 GB/s, 11 % below its baseline of 95.5 GB/s (median of the "
            "last runs)");
  EXPECT_EQ(u.cells[0]["regressed"], true);
}

TEST(Baseline, HardwareOrDriverChangeStartsOver) {
  const auto r = parse_agent_result(slurp(kSrc / "tests/unit/agent/data/h200x2-nv18.json"));
  ASSERT_TRUE(r.ok());
  Inventory inv = h200();
  merge_interconnects(inv, *r);
  const std::string fp = hardware_fingerprint(inv, *r);
  EXPECT_NE(fp.find("0000:00:06.0-0000:00:07.0 NV18"), std::string::npos) << fp;
  EXPECT_NE(fp.find("driver 580.159.04"), std::string::npos) << fp;
  Inventory newer = inv;
  newer.nvidia.loaded_version = "580.200.01";
  EXPECT_NE(hardware_fingerprint(newer, *r), fp);
  Inventory fewer_links = inv;
  fewer_links.interconnects[0].nvlinks = 12;
  EXPECT_NE(hardware_fingerprint(fewer_links, *r), fp);

  Baselines b;
  for (int i = 0; i < 3; ++i) { update_baselines(b, fp, {cell("p", 396)}, 0.10, 5); }
  auto u = update_baselines(b, hardware_fingerprint(newer, *r), {cell("p", 200)}, 0.10, 5);
  EXPECT_TRUE(u.regressions.empty());
  EXPECT_NE(u.reset.find("the hardware or driver changed"), std::string::npos);
  EXPECT_EQ(b.history.begin()->second.size(), 1u);
}

TEST(Baseline, APlantedRegressionIsAWarningAboveTheThresholdAndSurvivesARestart) {
  SelftestSpec spec;  // no hand-set thresholds
  RecordedState st;
  for (int i = 0; i < 3; ++i) {
    record_selftest(st, judged(run_scaled(1.0), spec), spec, h200(), "schedule");
    EXPECT_TRUE(st.selftest->warnings.empty());
  }
  // The daemon restarts: the state file round trip keeps the history.
  auto back = state_from_json(json::parse(to_json(st).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  RecordedState restarted = std::move(back).value();
  EXPECT_EQ(restarted.baselines.history.size(), st.baselines.history.size());
  // 0.88 x 396.4 = 348.8 GB/s: above the threshold (334.7), 12 % below the baseline.
  record_selftest(restarted, judged(run_scaled(0.88), spec), spec, h200(), "schedule");
  const auto& rec = *restarted.selftest;
  EXPECT_EQ(rec.verdict, "passed");
  ASSERT_EQ(rec.warnings.size(), 1u);
  EXPECT_NE(
      rec.warnings[0].find(
          "ce_write_bandwidth 0000:00:06.0->0000:00:07.0 (NV18): 348.8 GB/s, 12 % below its baseline of 396.4 GB/s"),
      std::string::npos)
      << rec.warnings[0];
  int regressed = 0;
  for (const auto& e : rec.expectations) { regressed += e.value("regressed", false) ? 1 : 0; }
  EXPECT_EQ(regressed, 1);

  // One finding sums it up, for /v1/findings and the status table.
  const auto f = bandwidth_finding(rec.expectations, rec.warnings);
  EXPECT_EQ(f.check, "selftest.bandwidth");
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_NE(f.summary.find("14 cell(s) at 0.89-1.01 of expected; lowest ce_write_bandwidth 0000:00:06.0->0000:00:07.0 "
                           "(NV18): 348.8 of 393.8 GB/s"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("; 1 regressed against the baseline"), std::string::npos) << f.summary;
  EXPECT_FALSE(f.remediation.empty());
  EXPECT_EQ(bandwidth_finding(st.selftest->expectations, st.selftest->warnings).severity, Severity::ok);

  // The metrics of that state.
  restarted.topology = topology_view([] {
    Inventory inv = h200();
    inv.interconnects.push_back({"0000:00:06.0", "0000:00:07.0", 18, 4});
    return inv;
  }());
  Runtime full;
  full.metrics_full_detail = true;
  const std::string m = render_metrics(restarted, full);
  const std::string pair = R"({direction="write",engine="ce",gpu="0000:00:06.0",peer_gpu="0000:00:07.0"})";
  EXPECT_NE(m.find("p2pnode_p2p_regressed" + pair + " 1"), std::string::npos) << m;
  EXPECT_NE(m.find("p2pnode_p2p_expected_bandwidth_bytes_per_second" + pair), std::string::npos);
  EXPECT_NE(m.find("p2pnode_p2p_threshold_bytes_per_second" + pair), std::string::npos);
  EXPECT_NE(m.find("p2pnode_p2p_baseline_bandwidth_bytes_per_second" + pair), std::string::npos);
  EXPECT_NE(m.find("p2pnode_p2p_bandwidth_ratio" + pair + " 0.88"), std::string::npos);
  EXPECT_NE(
      m.find(R"(p2pnode_p2p_regressed{direction="read",engine="ce",gpu="0000:00:06.0",peer_gpu="0000:00:07.0"} 0)"),
      std::string::npos);
  EXPECT_NE(m.find(R"(p2pnode_gpu_host_expected_bandwidth_bytes_per_second{direction="h2d",gpu="0000:00:06.0"})"),
            std::string::npos);
  EXPECT_NE(m.find(R"(p2pnode_p2p_link_info{gpu="0000:00:06.0",link="NV18",peer_gpu="0000:00:07.0"} 1)"),
            std::string::npos);
  EXPECT_NE(m.find(R"(p2pnode_p2p_link_info{gpu="0000:00:06.0",link="PHB",peer_gpu="0000:00:08.0"} 1)"),
            std::string::npos);
  // The default (compact) scrape: the regressed cell and its baseline only, the constants per path.
  const std::string c = render_metrics(restarted, Runtime{});
  EXPECT_NE(c.find("p2pnode_p2p_regressed" + pair + " 1"), std::string::npos) << c;
  EXPECT_NE(c.find("p2pnode_p2p_baseline_bandwidth_bytes_per_second" + pair), std::string::npos);
  EXPECT_EQ(c.find("p2pnode_p2p_regressed{direction=\"read\""), std::string::npos);
  EXPECT_NE(c.find("\np2pnode_p2p_regressed_cells 1\n"), std::string::npos);
  EXPECT_EQ(c.find("p2pnode_p2p_bandwidth_ratio{"), std::string::npos);             // per cell: full detail only
  EXPECT_NE(c.find("\np2pnode_p2p_bandwidth_ratio_min "), std::string::npos) << c;  // the node's worst
  EXPECT_EQ(c.find("p2pnode_p2p_expected_bandwidth_bytes_per_second{"), std::string::npos);
  EXPECT_NE(
      c.find(R"(p2pnode_p2p_path_expected_bandwidth_bytes_per_second{direction="write",engine="ce",path="NV18-450"})"),
      std::string::npos)
      << c;
  EXPECT_NE(
      c.find(
          R"(p2pnode_p2p_bandwidth_bytes_per_second{direction="write",engine="ce",gpu="0000:00:06.0",path="NV18-450",peer_gpu="0000:00:07.0"})"),
      std::string::npos);
  // Host copies: the expected figure once per class of GPU, not per GPU.
  EXPECT_NE(c.find(R"(p2pnode_gpu_host_path_expected_bandwidth_bytes_per_second{direction="h2d",path="PCIe-)"),
            std::string::npos)
      << c;
  EXPECT_EQ(c.find("p2pnode_gpu_host_expected_bandwidth_bytes_per_second{"), std::string::npos);
  // `status` shows measured, expected and the ratio.
  const auto body = status_body(restarted, Runtime{});
  EXPECT_EQ(body["selftest"]["warnings"].size(), 1u);
  const std::string table = expectations_table(body["selftest"]["expectations"]);
  EXPECT_NE(table.find("ce_write_bandwidth"), std::string::npos);
  EXPECT_NE(table.find("348.8 /    393.8 (0.89)"), std::string::npos) << table;
  EXPECT_NE(table.find("REGRESSED"), std::string::npos);
}
