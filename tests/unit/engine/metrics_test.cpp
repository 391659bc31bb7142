#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/metrics.hpp"
#include "engine/views.hpp"
#include "judge/agent_result.hpp"
#include "probe/probe.hpp"
#include "unit/source_files.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;
using namespace p2pnode::engine;

namespace {
using p2pnode::test_files::kSrc;

RecordedState h200_state() {
  const Inventory inv = probe::probe_inventory(sys::SysRoot(kSrc / "tests/fixtures/h200-4gpu"));
  RecordedState s;
  s.state = NodeState::ready;
  s.profile = "h200-nvlink";
  s.devices = devices_view(inv);
  s.topology = topology_view(inv);
  s.driver = driver_view(inv, nullptr);
  s.node = {{"iommu", "off"}};
  std::ifstream in(kSrc / "tests/fixtures/gpu-runs/h200x4-rounds.json");
  std::ostringstream text;
  text << in.rdbuf();
  s.selftest = SelftestRecord{"passed", {}, "start", 1700000000, 61.25, nlohmann::json::parse(text.str())};
  s.selftest_last_success_unix = 1700000061;
  s.selftest_last_success_duration_s = 61.25;
  s.reconcile_runs = {{"ready", 2}, {"failed", 1}};
  s.selftest_runs = {{"passed", 1}};
  s.reconciled_unix = 1700000100;
  return s;
}

bool has_line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) { return true; }
  }
  return false;
}
}  // namespace

TEST(Metrics, NamesLabelsAndUnits) {
  Runtime rt;
  rt.version = "0.1.0";
  rt.started_unix = 1700000000;
  const std::string m = render_metrics(h200_state(), rt);
  EXPECT_TRUE(has_line_starting(m, "p2pnode_info{")) << m.substr(0, 2000);
  EXPECT_NE(m.find("p2pnode_node_state{state=\"ready\"} 1"), std::string::npos);
  EXPECT_NE(m.find("p2pnode_node_state{state=\"failed\"} 0"), std::string::npos);
  EXPECT_NE(m.find("# TYPE p2pnode_reconcile_runs_total counter"), std::string::npos);
  EXPECT_TRUE(has_line_starting(m, "p2pnode_reconcile_runs_total{result=\"ready\"} 2"));
  EXPECT_TRUE(has_line_starting(m, "p2pnode_selftest_last_success_timestamp_seconds 1700000061"));
  EXPECT_TRUE(has_line_starting(m, "p2pnode_selftest_last_success_duration_seconds 61.25"));
  // Pair metrics: gpu and peer_gpu are PCI addresses; bandwidth in bytes per second.
  EXPECT_NE(m.find("p2pnode_p2p_bandwidth_bytes_per_second{"), std::string::npos);
  EXPECT_NE(m.find("gpu=\"0000:00:06.0\""), std::string::npos);
  EXPECT_NE(m.find("peer_gpu=\"0000:00:07.0\""), std::string::npos);
  EXPECT_NE(m.find("engine=\"sm\""), std::string::npos);
  EXPECT_NE(m.find("direction=\"bidirectional\""), std::string::npos);
  EXPECT_TRUE(has_line_starting(m, "p2pnode_p2p_latency_seconds{"));
  EXPECT_TRUE(has_line_starting(m, "p2pnode_p2p_integrity_checked_pairs "));
  EXPECT_TRUE(has_line_starting(m, "p2pnode_p2p_access{"));
  EXPECT_TRUE(has_line_starting(m, "p2pnode_gpu_aperture_bytes{gpu=\"0000:00:06.0\"}"));
  EXPECT_TRUE(has_line_starting(m, "p2pnode_gpu_link_width_lanes{"));
  EXPECT_TRUE(has_line_starting(m, "p2pnode_iommu_mode{mode=\"off\"} 1"));
  EXPECT_TRUE(has_line_starting(m, "p2pnode_driver_versions_match "));
  // No hostname label: Prometheus adds instance.
  EXPECT_EQ(m.find("hostname"), std::string::npos);
}

TEST(Metrics, EmptyStateStillRenders) {
  const std::string m = render_metrics(RecordedState{}, Runtime{});
  EXPECT_NE(m.find("p2pnode_node_state{state=\"starting\"} 1"), std::string::npos);
  EXPECT_EQ(m.find("p2pnode_p2p_"), std::string::npos);
}

TEST(Metrics, CorruptStoredResultIsSkippedNotFatal) {
  RecordedState s = h200_state();
  s.selftest->result = {{"schema_version", 1}, {"garbage", true}};
  const std::string m = render_metrics(s, Runtime{});
  EXPECT_EQ(m.find("p2pnode_p2p_bandwidth"), std::string::npos);
  EXPECT_NE(m.find("p2pnode_selftest_passed"), std::string::npos);
}

TEST(Metrics, SelftestScheduleWhenOneApplies) {
  Runtime rt;
  EXPECT_EQ(render_metrics(RecordedState{}, rt).find("p2pnode_selftest_schedule_seconds"), std::string::npos);
  rt.selftest_schedule_s = 21600;
  EXPECT_NE(render_metrics(RecordedState{}, rt).find("\np2pnode_selftest_schedule_seconds 21600\n"), std::string::npos);
}

namespace {
std::size_t series(const std::string& text, const std::string& family) {
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    if (line.rfind(family + "{", 0) == 0 || line.rfind(family + " ", 0) == 0) { ++n; }
  }
  return n;
}

// A copy-engine cell of an NV18 pair (ceiling 450, expected 393.75 GB/s) as the judge writes it.
nlohmann::json nv18_cell(const char* gpu, const char* peer, const char* dir, double threshold, double ratio,
                         bool below = false) {
  return {{"case", std::string("ce_") + dir + "_bandwidth"},
          {"gpu", gpu},
          {"peer_gpu", peer},
          {"engine", "ce"},
          {"direction", dir},
          {"link", "NV18"},
          {"ceiling_gbps", 450.0},
          {"expected_gbps", 393.75},
          {"threshold_gbps", threshold},
          {"ratio", ratio},
          {"below_threshold", below},
          {"regressed", false}};
}
}  // namespace

// The default scrape keeps the P2P matrix (bandwidth per pair and case with its path class,
// latency, access) and moves the constants to one series per path class and case; error flags
// appear only where set. `metrics: {detail: full}` adds the per-pair figures back.
TEST(Metrics, CompactByDefaultFullOnRequest) {
  RecordedState s = h200_state();
  s.selftest->expectations = nlohmann::json::array();
  for (const char* peer : {"0000:00:07.0", "0000:00:08.0"}) {
    for (const char* dir : {"write", "read"}) {
      s.selftest->expectations.push_back(nv18_cell("0000:00:06.0", peer, dir, 350.0, 1.0));
    }
  }
  // Same link and ceiling, another threshold: a class of its own.
  s.selftest->expectations.push_back(nv18_cell("0000:00:07.0", "0000:00:06.0", "write", 300.0, 1.0));
  const std::string c = render_metrics(s, Runtime{});
  EXPECT_EQ(series(c, "p2pnode_p2p_path_expected_bandwidth_bytes_per_second"), 3u) << c;
  EXPECT_NE(
      c.find(
          R"(p2pnode_p2p_path_threshold_bytes_per_second{direction="write",engine="ce",path="NV18-450"} 350000000000)"),
      std::string::npos)
      << c;
  EXPECT_NE(
      c.find(
          R"(p2pnode_p2p_path_threshold_bytes_per_second{direction="write",engine="ce",path="NV18-450~2"} 300000000000)"),
      std::string::npos)
      << c;
  EXPECT_NE(c.find(R"(engine="ce",gpu="0000:00:07.0",path="NV18-450~2",peer_gpu="0000:00:06.0"})"), std::string::npos);
  EXPECT_EQ(series(c, "p2pnode_p2p_expected_bandwidth_bytes_per_second"), 0u);
  EXPECT_EQ(series(c, "p2pnode_p2p_threshold_bytes_per_second"), 0u);
  EXPECT_EQ(series(c, "p2pnode_p2p_bandwidth_ratio"), 0u);
  EXPECT_EQ(series(c, "p2pnode_p2p_regressed"), 0u);
  EXPECT_NE(c.find("\np2pnode_p2p_regressed_cells 0\n"), std::string::npos);
  // The recorded result is clean: no pair with corrupted bytes, 12 pairs checked.
  EXPECT_EQ(series(c, "p2pnode_p2p_integrity_error_bytes"), 0u);
  EXPECT_NE(c.find("\np2pnode_p2p_integrity_checked_pairs 12\n"), std::string::npos) << c;
  EXPECT_EQ(series(c, "p2pnode_p2p_latency_seconds"), 12u);
  EXPECT_EQ(series(c, "p2pnode_p2p_access"), 12u);

  Runtime full;
  full.metrics_full_detail = true;
  const std::string f = render_metrics(s, full);
  EXPECT_EQ(series(f, "p2pnode_p2p_expected_bandwidth_bytes_per_second"), 5u);
  EXPECT_EQ(series(f, "p2pnode_p2p_threshold_bytes_per_second"), 5u);
  EXPECT_EQ(series(f, "p2pnode_p2p_bandwidth_ratio"), 5u);
  EXPECT_EQ(series(f, "p2pnode_p2p_regressed"), 5u);
  EXPECT_EQ(series(f, "p2pnode_p2p_integrity_error_bytes"), 12u);
  EXPECT_EQ(series(f, "p2pnode_p2p_path_expected_bandwidth_bytes_per_second"), 3u);
  EXPECT_EQ(series(f, "p2pnode_p2p_bandwidth_bytes_per_second"), series(c, "p2pnode_p2p_bandwidth_bytes_per_second"));
}

// A cell below its threshold is a series of its own (with its path class), so that the alert reads
// the few cells that are below instead of joining every pair with its threshold; the node's worst
// cell (measured over expected) is one series for the fleet's worst-pair panels.
TEST(Metrics, BelowThresholdCellsAndTheWorstRatioAreTheNodesOwn) {
  RecordedState s = h200_state();
  s.selftest->expectations = nlohmann::json::array();
  const std::tuple<const char*, const char*, double, bool> cells[] = {
      {"0000:00:07.0", "write", 0.98, false},
      {"0000:00:07.0", "read", 0.61, true},
      {"0000:00:08.0", "write", 1.01, false},
  };
  for (const auto& [peer, dir, ratio, below] : cells) {
    s.selftest->expectations.push_back(nv18_cell("0000:00:06.0", peer, dir, 350.0, ratio, below));
  }
  // A host copy's ratio is not a pair's: it does not count.
  s.selftest->expectations.push_back({{"case", "host_device_bandwidth"},
                                      {"gpu", "0000:00:06.0"},
                                      {"peer_gpu", nullptr},
                                      {"engine", "ce"},
                                      {"direction", "h2d"},
                                      {"expected_gbps", 55.0},
                                      {"ratio", 0.2}});
  const std::string c = render_metrics(s, Runtime{});
  EXPECT_EQ(series(c, "p2pnode_p2p_below_threshold"), 1u) << c;
  EXPECT_NE(
      c.find(
          R"(p2pnode_p2p_below_threshold{direction="read",engine="ce",gpu="0000:00:06.0",path="NV18-450",peer_gpu="0000:00:07.0"} 1)"),
      std::string::npos)
      << c;
  EXPECT_NE(c.find("\np2pnode_p2p_below_threshold_cells 1\n"), std::string::npos) << c;
  EXPECT_NE(c.find("\np2pnode_p2p_bandwidth_ratio_min 0.61\n"), std::string::npos) << c;

  Runtime full;
  full.metrics_full_detail = true;
  const std::string f = render_metrics(s, full);
  EXPECT_EQ(series(f, "p2pnode_p2p_below_threshold"), 3u) << f;
  EXPECT_NE(
      f.find(
          R"(p2pnode_p2p_below_threshold{direction="write",engine="ce",gpu="0000:00:06.0",path="NV18-450",peer_gpu="0000:00:08.0"} 0)"),
      std::string::npos)
      << f;

  // A healthy run: no cell below, none exported; the worst ratio is still there.
  for (auto& e : s.selftest->expectations) {
    if (e.contains("below_threshold")) { e["below_threshold"] = false; }
  }
  const std::string h = render_metrics(s, Runtime{});
  EXPECT_EQ(series(h, "p2pnode_p2p_below_threshold"), 0u) << h;
  EXPECT_NE(h.find("\np2pnode_p2p_below_threshold_cells 0\n"), std::string::npos) << h;
  EXPECT_NE(h.find("\np2pnode_p2p_bandwidth_ratio_min 0.61\n"), std::string::npos) << h;
}

TEST(Metrics, BarCopyHasAFamilyOfItsOwnAndLeavesHostCopiesAlone) {
  RecordedState s = h200_state();
  nlohmann::json& doc = s.selftest->result;
  auto summary = [](double v) {
    return nlohmann::json{{"count", 3}, {"median", v}, {"mean", v}, {"min", v}, {"max", v}};
  };
  doc["cases"].push_back({{"key", "bar_copy"},
                          {"description", "d"},
                          {"status", "passed"},
                          {"shape", "gpu"},
                          {"duration_s", 1.0},
                          {"cells", nlohmann::json::array({{{"gpu", 0},
                                                            {"status", "passed"},
                                                            {"concurrent_pairs", 1},
                                                            {"bar_write_bandwidth_gbps", summary(9.5)},
                                                            {"bar_read_bandwidth_gbps", summary(0.6)}}})}});
  s.selftest->expectations = nlohmann::json::array();
  for (const auto& [c, engine, expected] :
       {std::tuple{"host_device_bandwidth", "ce", 55.0}, {"bar_copy", "cpu", 6.0}}) {
    s.selftest->expectations.push_back({{"case", c},
                                        {"gpu", "0000:00:06.0"},
                                        {"peer_gpu", nullptr},
                                        {"engine", engine},
                                        {"direction", "h2d"},
                                        {"link", "PCIe"},
                                        {"ceiling_gbps", 63.015},
                                        {"expected_gbps", expected},
                                        {"threshold_gbps", expected * 0.85}});
  }
  Runtime full;
  full.metrics_full_detail = true;
  const std::string m = render_metrics(s, full);
  EXPECT_NE(m.find(R"(p2pnode_gpu_bar_bandwidth_bytes_per_second{direction="write",gpu="0000:00:06.0"} 9500000000)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(R"(p2pnode_gpu_bar_bandwidth_bytes_per_second{direction="read",gpu="0000:00:06.0"} 600000000)"),
            std::string::npos)
      << m;
  // The host copies' expectation is the copy engine's, not overwritten by the CPU's.
  EXPECT_NE(
      m.find(R"(p2pnode_gpu_host_expected_bandwidth_bytes_per_second{direction="h2d",gpu="0000:00:06.0"} 55000000000)"),
      std::string::npos)
      << m;
  EXPECT_EQ(series(m, "p2pnode_gpu_host_path_expected_bandwidth_bytes_per_second"), 1u) << m;
}
