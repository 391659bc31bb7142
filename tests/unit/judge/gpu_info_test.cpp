#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/metrics.hpp"
#include "engine/views.hpp"
#include "judge/gpu_info.hpp"
#include "judge/verdict.hpp"
#include "probe/probe.hpp"
#include "unit/source_files.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;
using namespace p2pnode::judge;
using namespace p2pnode::engine;
using nlohmann::json;

namespace {
using p2pnode::test_files::kSrc;
using p2pnode::test_files::read_json;
}  // namespace

TEST(GpuInfo, NvmlBusIdIsDcgmExportersForm) {
  EXPECT_EQ(nvml_bus_id("0000:06:00.0"), "00000000:06:00.0");
  EXPECT_EQ(nvml_bus_id("0000:3b:00.0"), "00000000:3B:00.0");
  EXPECT_EQ(nvml_bus_id("00000000:3B:00.0"), "00000000:3B:00.0");
  EXPECT_EQ(nvml_bus_id("not an address"), "not an address");
  EXPECT_EQ(nvml_bus_id("0000:3b:00"), "0000:3b:00");
}

TEST(GpuInfo, IndexInPciOrderNvidiaOnlyUuidFromTheAgent) {
  // Listed out of order, one non-NVIDIA display device; the agent named one GPU's UUID.
  const json gpus = json::array({{{"bdf", "0000:c1:00.0"}, {"vendor_id", "0x10de"}},
                                 {{"bdf", "0000:41:00.0"}, {"vendor_id", "0x10de"}},
                                 {{"bdf", "0000:03:00.0"}, {"vendor_id", "0x1a03"}},
                                 {{"bdf", "0000:0a:00.0"}, {"vendor_id", "0x10de"}}});
  AgentResult r;
  r.devices = {{0, "NVIDIA GeForce RTX 4090", "GPU-11111111-2222-3333-4444-555555555555", "0000:41:00.0"}};
  const auto rows = gpu_info(gpus, &r, "tiny1");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].gpu, "0000:0a:00.0");
  EXPECT_EQ(rows[0].gpu_index, "0");
  EXPECT_EQ(rows[0].pci_bus_id, "00000000:0A:00.0");
  EXPECT_EQ(rows[0].uuid, "");
  EXPECT_EQ(rows[1].gpu, "0000:41:00.0");
  EXPECT_EQ(rows[1].gpu_index, "1");
  EXPECT_EQ(rows[1].uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(rows[2].gpu, "0000:c1:00.0");
  EXPECT_EQ(rows[2].gpu_index, "2");
  EXPECT_EQ(rows[2].hostname, "tiny1");
  EXPECT_TRUE(gpu_info(gpus, nullptr, "tiny1")[1].uuid.empty());
}

// The real 4x H200 recording and its real agent result: every GPU's UUID comes from the result.
TEST(GpuInfo, MetricOnTheRecordedH200Node) {
  const Inventory inv = probe::probe_inventory(sys::SysRoot(kSrc / "tests/fixtures/h200-4gpu"));
  RecordedState s;
  s.devices = devices_view(inv);
  s.node = {{"hostname", "h200-a"}};
  const json result = read_json(kSrc / "tests/fixtures/gpu-runs/h200x4-rounds.json");
  s.selftest = SelftestRecord{"passed", {}, "start", 1700000000, 61.25, result};
  const std::string m = render_metrics(s, Runtime{});
  for (const auto& d : result["devices"]) {
    const std::string bdf = d["pci_bus_id"];
    const std::string line = "p2pnode_gpu_info{Hostname=\"h200-a\",UUID=\"" + d["uuid"].get<std::string>() +
                             "\",gpu=\"" + bdf + "\",gpu_index=\"" + std::to_string(d["index"].get<int>()) +
                             "\",pci_bus_id=\"" + nvml_bus_id(bdf) + "\"} 1";
    EXPECT_NE(m.find(line), std::string::npos) << line << "\n" << m.substr(m.find("p2pnode_gpu_info"), 800);
  }
}
