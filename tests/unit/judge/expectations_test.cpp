// Expectations from the hardware: the real 2x H200 run (NV18 as the agent reports it) judged with
// no hand-set thresholds, the same run with one pair at 60 % of its expectation, the 4-GPU runs,
// and the driver's view of the pairs merged into the inventory (NV18, not PHB).
#include "judge/expectations.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "checks/check.hpp"
#include "judge/interconnect.hpp"
#include "judge/verdict.hpp"
#include "probe/probe.hpp"
#include "unit/fixture_inventory.hpp"
#include "unit/source_files.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;
using namespace p2pnode::judge;
using nlohmann::json;

namespace {
using namespace p2pnode::test_files;

AgentResult load(const fs::path& p) {
  auto r = parse_agent_result(slurp(p));
  EXPECT_TRUE(r.ok()) << p << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : AgentResult{};
}
using p2pnode::test_files::h200;
SelftestSpec no_thresholds() { return SelftestSpec{}; }  // no min_bandwidth: fractions of the expected figures
// Every pair of the document NV18 over NVLink 4 (NVML 4.0), as on the lent H200 machines.
std::string with_nv18(const fs::path& p) {
  json d = json::parse(slurp(p));
  json pairs = json::array();
  const auto n = static_cast<int>(d["devices"].size());
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      pairs.push_back({{"gpus", {a, b}},
                       {"link", "NV18"},
                       {"nvlinks", 18},
                       {"nvlink_version", 6},
                       {"nvlink_via", "nvswitch"},
                       {"p2p_status", {{"read", "ok"}, {"write", "ok"}, {"nvlink", "ok"}, {"atomics", "ok"}}}});
    }
  }
  d["interconnect"] = {{"source", "nvml"}, {"reason", nullptr}, {"pairs", pairs}};
  return d.dump();
}
}  // namespace

TEST(Expectations, AgentInterconnectMakesTheH200PairNv18) {
  const auto r = load(kSrc / "tests/unit/agent/data/h200x2-nv18.json");
  EXPECT_EQ(r.interconnect_source, "nvml");
  ASSERT_EQ(r.interconnect.size(), 1u);
  EXPECT_EQ(r.interconnect[0].nvlinks, 18);
  EXPECT_EQ(r.interconnect[0].via, "nvswitch");
  EXPECT_EQ(r.interconnect[0].p2p_status.at("read"), "ok");
  EXPECT_EQ(r.devices[0].compute_capability_major, 9);
  Inventory inv = h200();
  merge_interconnects(inv, r);
  ASSERT_EQ(inv.interconnects.size(), 1u);
  EXPECT_EQ(inv.interconnects[0].nvlink_generation, 4);
  // check: "pairs: 1 NV18" instead of PHB (the fixture has 4 GPUs; the run saw 2).
  Profile p;
  p.name = "t";
  const auto f = checks::check_pcie_topology(p, inv);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find("1 NV18"), std::string::npos) << f[0].summary;
  EXPECT_EQ(f[0].observed["matrix"][0][1], "NV18");
  EXPECT_EQ(f[0].observed["matrix"][0][2], "PHB");
}

TEST(Expectations, NoNvmlMeansAStatedReasonAndPcie) {
  json d = p2pnode::test_files::nv18_run();
  d["interconnect"] = {
      {"source", "none"},
      {"reason", "NVML not available: libnvidia-ml.so.1: cannot open shared object file; PCIe assumed for every pair"},
      {"pairs", json::array()}};
  auto r = parse_agent_result(d.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  Inventory inv = h200();
  merge_interconnects(inv, *r);
  EXPECT_TRUE(inv.interconnects.empty());
  EXPECT_NE(inv.interconnect_source.find("NVML not available"), std::string::npos);
  const auto cells = expectations(*r, inv);
  ASSERT_FALSE(cells.empty());
  EXPECT_EQ(cells[0].link, "PHB");
}

TEST(Expectations, RealH200RunMeetsItsExpectations) {
  const auto r = load(kSrc / "tests/unit/agent/data/h200x2-nv18.json");
  const auto j = judge_agent_result(r, no_thresholds(), h200());
  EXPECT_EQ(j.verdict, "passed") << (j.reasons.empty() ? "" : j.reasons.front());
  // 2 pairs x 5 cases + 2 GPUs x (h2d, d2h)
  ASSERT_EQ(j.expectations.size(), 14u);
  for (const auto& e : j.expectations) {
    ASSERT_TRUE(e["ratio"].is_number()) << e.dump();
    EXPECT_GT(e["ratio"].get<double>(), 0.99) << e.dump();
    EXPECT_LT(e["ratio"].get<double>(), 1.03) << e.dump();
    EXPECT_EQ(e["threshold_source"], "0.85 of the expected");
    EXPECT_FALSE(e["below_threshold"].get<bool>());
  }
  const auto& w = j.expectations[0];
  EXPECT_EQ(w["case"], "ce_write_bandwidth");
  EXPECT_EQ(w["link"], "NV18");
  EXPECT_EQ(w["ceiling_gbps"], 450.0);
  EXPECT_EQ(w["expected_gbps"], 393.75);
  EXPECT_NEAR(w["threshold_gbps"].get<double>(), 334.688, 0.001);
  const auto& host = j.expectations.back();
  EXPECT_EQ(host["case"], "host_device_bandwidth");
  EXPECT_NEAR(host["ceiling_gbps"].get<double>(), 63.015, 0.001);
}

TEST(Expectations, APairAt60PercentOfItsExpectationFails) {
  const auto r = load(kSrc / "tests/unit/agent/data/h200x2-nv18-60pct.json");
  const auto j = judge_agent_result(r, no_thresholds(), h200());
  EXPECT_EQ(j.verdict, "below_threshold");
  ASSERT_EQ(j.reasons.size(), 1u);
  const auto& why = j.reasons[0];
  EXPECT_NE(
      why.find("ce_write_bandwidth 0000:00:06.0->0000:00:07.0 (NV18): 236.2 GB/s, 60 % of the expected 393.8 GB/s"),
      std::string::npos)
      << why;
  EXPECT_NE(why.find("below 334.7 GB/s (0.85 of the expected)"), std::string::npos) << why;
  // A hand-set figure still wins where the profile names the class.
  SelftestSpec spec;
  spec.min_bandwidth["NV"] = Bandwidth{200e9};
  EXPECT_EQ(judge_agent_result(r, spec, h200()).verdict, "passed");
  spec.min_fraction_of_expected = 0.5;
  spec.min_bandwidth.clear();
  EXPECT_EQ(judge_agent_result(r, spec, h200()).verdict, "passed");
}

TEST(Expectations, EveryRecordedH200RunPassesWithoutHandSetThresholds) {
  int n = 0;
  for (const char* f : {"h200x2-default-1.json", "h200x2-default-2.json", "h200x2-default-3.json", "h200x2-rounds.json",
                        "h200x4-serial.json", "h200x4-serial-2.json", "h200x4-rounds.json", "h200x4-rounds-2.json"}) {
    auto r = parse_agent_result(with_nv18(kSrc / "tests/fixtures/gpu-runs" / f));
    ASSERT_TRUE(r.ok()) << f << ": " << r.error().message;
    const auto j = judge_agent_result(*r, no_thresholds(), h200());
    EXPECT_EQ(j.verdict, "passed") << f << ": " << (j.reasons.empty() ? "" : j.reasons.front());
    double lo = 9, hi = 0;
    for (const auto& e : j.expectations) {
      lo = std::min(lo, e["ratio"].get<double>());
      hi = std::max(hi, e["ratio"].get<double>());
    }
    EXPECT_GT(lo, 0.95) << f;  // the spread the 0.85 default leaves room for
    EXPECT_LT(hi, 1.05) << f;
    ++n;
  }
  EXPECT_EQ(n, 8);
}

TEST(Expectations, CheckAgentResultRefusesNonsense) {
  json d = p2pnode::test_files::nv18_run();
  Inventory inv = h200();
  d["interconnect"]["pairs"][0]["nvlinks"] = 1LL << 40;
  auto st = judge::merge_agent_interconnect(inv, d);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "interconnect.pairs[0].nvlinks: expected an integer from 0 to 1024");
  d["interconnect"]["pairs"][0]["nvlinks"] = 18;
  d["interconnect"]["pairs"][0]["gpus"] = {0, 7};
  st = judge::merge_agent_interconnect(inv, d);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "interconnect.pairs[0].gpus: not two of the document's devices");
  EXPECT_TRUE(inv.interconnects.empty());  // nothing merged from a bad document
  // The daemon's parser says where, too.
  auto r = parse_agent_result(d.dump());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("interconnect.pairs[0].gpus[1]: expected a device index 0..1"), std::string::npos)
      << r.error().message;
}
