// The bar_copy case judged: CPU stores through gdrcopy's mapping against the link (capped at what
// one CPU core reaches), loads carry no expectation, stores no faster than loads mean an uncached
// mapping, and the profile's min_bandwidth.BAR wins over the fraction.
#include <gtest/gtest.h>

#include "judge/expectations.hpp"
#include "judge/verdict.hpp"
#include "probe/probe.hpp"
#include "unit/fixture_inventory.hpp"
#include "unit/source_files.hpp"

using namespace p2pnode;
using namespace p2pnode::judge;
using nlohmann::json;
using namespace p2pnode::test_files;

namespace {
using p2pnode::test_files::h200;
json summary(double v) {
  return {{"count", 3}, {"median", v}, {"mean", v}, {"min", v}, {"max", v}, {"p10", v}, {"p90", v}, {"spread_pct", 0}};
}
json bar_cell(int gpu, double write, double read) {
  return {{"gpu", gpu},
          {"status", "passed"},
          {"concurrent_pairs", 1},
          {"bar_write_bandwidth_gbps", summary(write)},
          {"bar_read_bandwidth_gbps", summary(read)},
          {"backend", "gdrdrv"},
          {"mapping_type", "wc"},
          {"integrity", json::array({{{"label", "cpu_write/whole"}, {"checked_bytes", 8388608}, {"bad_bytes", 0}}})}};
}
// The real 2x H200 run with a bar_copy case added: GPU 0 healthy, GPU 1 as an uncached mapping runs.
AgentResult with_bar(double w0, double r0, double w1, double r1) {
  json d = p2pnode::test_files::nv18_run();
  d["cases"].push_back({{"key", "bar_copy"},
                        {"description", "CPU copies through gdrcopy's BAR mapping"},
                        {"status", "passed"},
                        {"shape", "gpu"},
                        {"duration_s", 1.5},
                        {"steps", 2},
                        {"cells", json::array({bar_cell(0, w0, r0), bar_cell(1, w1, r1)})}});
  auto r = parse_agent_result(d.dump());
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : AgentResult{};
}
std::vector<json> bar_rows(const Judgement& j) {
  std::vector<json> out;
  for (const auto& e : j.expectations) {
    if (e["case"] == "bar_copy") { out.push_back(e); }
  }
  return out;
}
}  // namespace

TEST(BarCopyJudge, WritesAreHeldToTheCappedLinkFigureReadsToNothing) {
  const auto r = with_bar(9.8, 0.62, 8.1, 0.55);
  ASSERT_EQ(r.cases.back().cells[0].bar_write_gbps, 9.8);
  const auto j = judge_agent_result(r, SelftestSpec{}, h200());
  EXPECT_EQ(j.verdict, "passed") << (j.reasons.empty() ? "" : j.reasons.front());
  const auto rows = bar_rows(j);
  ASSERT_EQ(rows.size(), 4u);  // 2 GPUs x (CPU stores, CPU loads)
  EXPECT_EQ(rows[0]["engine"], "cpu");
  EXPECT_EQ(rows[0]["direction"], "h2d");
  EXPECT_NEAR(rows[0]["ceiling_gbps"].get<double>(), 63.015, 0.001);  // Gen5 x16
  EXPECT_EQ(rows[0]["expected_gbps"], 6.0);                           // 0.38 x 63 capped at one core's 6 GB/s
  EXPECT_NEAR(rows[0]["threshold_gbps"].get<double>(), 5.1, 0.001);
  EXPECT_EQ(rows[1]["direction"], "d2h");
  EXPECT_TRUE(rows[1]["expected_gbps"].is_null());
  EXPECT_TRUE(rows[1]["threshold_gbps"].is_null());
  EXPECT_FALSE(rows[1]["below_threshold"].get<bool>());
}

TEST(BarCopyJudge, AnUncachedMappingIsBelowThresholdWithWhy) {
  const auto j = judge_agent_result(with_bar(9.8, 0.62, 0.31, 0.55), SelftestSpec{}, h200());
  EXPECT_EQ(j.verdict, "below_threshold");
  ASSERT_EQ(j.reasons.size(), 2u);
  EXPECT_NE(j.reasons[0].find("bar_copy 0000:"), std::string::npos) << j.reasons[0];
  EXPECT_NE(
      j.reasons[0].find("CPU stores 0.31 GB/s, no faster than loads 0.55 GB/s: the BAR mapping is not write-combined"),
      std::string::npos)
      << j.reasons[0];
  EXPECT_NE(j.reasons[1].find("bar_copy/h2d"), std::string::npos) << j.reasons[1];
  EXPECT_NE(j.reasons[1].find("0.3 GB/s, 5 % of the expected 6.0 GB/s, below 5.1 GB/s (0.85 of the expected)"),
            std::string::npos)
      << j.reasons[1];
}

TEST(BarCopyJudge, TheProfilesBarFigureWins) {
  SelftestSpec spec;
  spec.min_bandwidth["BAR"] = Bandwidth{4e9};
  spec.min_bandwidth["any"] = Bandwidth{1e12};  // a pair figure: never a BAR one
  auto j = judge_agent_result(with_bar(4.5, 0.5, 4.2, 0.5), spec, h200());
  for (const auto& row : bar_rows(j)) {
    if (row["direction"] == "h2d") {
      EXPECT_EQ(row["threshold_source"], "the profile's min_bandwidth.BAR") << row.dump();
    }
  }
  for (const auto& why : j.reasons) { EXPECT_EQ(why.find("bar_copy"), std::string::npos) << why; }
  spec.min_bandwidth["BAR"] = Bandwidth{5e9};
  j = judge_agent_result(with_bar(4.5, 0.5, 4.2, 0.5), spec, h200());
  int below = 0;
  for (const auto& why : j.reasons) {
    below += why.find("below 5.0 GB/s (the profile's min_bandwidth.BAR)") != std::string::npos;
  }
  EXPECT_EQ(below, 2);
}

TEST(BarCopyJudge, RecordedDocumentsParse) {
  // The case's output over the stand-in libgdrapi (host memory): two bandwidths and the latency table.
  auto s = parse_agent_result(slurp(kSrc / "tests/unit/agent/data/bar-copy-stand-in.json"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->cases.size(), 1u);
  EXPECT_TRUE(s->cases[0].cells[0].bar_write_gbps.has_value());
  EXPECT_EQ(s->integrity_bad_bytes, 0u);
  // The lent H100 (driver 580, CUDA 13.0, no gdrdrv): waived with the reason, which the judge keeps.
  auto h = parse_agent_result(slurp(kSrc / "tests/fixtures/gpu-runs/h100-bar-lib.json"));
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->cases[0].status, "waived");
  EXPECT_NE(h->cases[0].reason.find("the driver is CUDA 13.0"), std::string::npos) << h->cases[0].reason;
  const auto j = judge_agent_result(*h, SelftestSpec{}, h200());
  EXPECT_EQ(j.verdict, "below_threshold");  // nothing ran: never "passed"
  EXPECT_NE(j.reasons.back().find("no self-test case ran"), std::string::npos) << j.reasons.back();
}
