// `p2pnode-agent --health` through a stand-in NVML (tests/fake_nvml, box h200-pair-l40s) and
// without any NVML: the document the daemon decodes (daemon/health/agent_health.cpp), per GPU and
// link.
#include "p2pnode/agent/health.hpp"
#include "unit/temp_dir.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "fake_nvml/use_box.hpp"

using namespace p2pnode::agent;
using p2pnode::fake_nvml::UseBox;

TEST(AgentHealth, ReadsLinksAndCountersThroughNvml) {
  const UseBox box("h200-pair-l40s");
  const HealthReport r = read_health(P2PNODE_FAKE_NVML);
  ASSERT_TRUE(r.available) << r.reason;
  EXPECT_EQ(r.driver_version, "580.95.05");
  ASSERT_EQ(r.gpus.size(), 3u);
  EXPECT_EQ(r.gpus[0].pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(r.gpus[1].pci_bus_id, "0000:2a:00.0");
  EXPECT_EQ(r.gpus[0].name, "NVIDIA H200");
  ASSERT_EQ(r.gpus[0].links.size(), 4u);
  EXPECT_FALSE(r.gpus[0].links[2].active);
  EXPECT_TRUE(r.gpus[0].links[2].remote_pci_bus_id.empty()) << "no far end asked of a link that is down";
  EXPECT_EQ(r.gpus[0].links[1].remote_pci_bus_id, "0000:2a:00.0");
  EXPECT_EQ(*r.gpus[0].links[1].errors[0], 12u);  // replay
  EXPECT_EQ(*r.gpus[0].links[1].errors[2], 3u);   // crc_flit
  EXPECT_FALSE(r.gpus[0].links[1].errors[4]);     // ecc_data: not supported
  EXPECT_TRUE(r.gpus[2].links.empty());           // PCIe only
}

// The replay, recovery and flit CRC counters of every link come in one field-values call per GPU;
// only the data CRC and ECC counters are read one by one (8 links x 2 = 16 calls, not 40).
TEST(AgentHealth, LinkCountersAreBatched) {
  const UseBox box("h200-pair-l40s");
  void* lib = dlopen(P2PNODE_FAKE_NVML, RTLD_NOW);
  ASSERT_NE(lib, nullptr);
  auto calls = reinterpret_cast<int (*)()>(dlsym(lib, "fake_legacy_error_counter_calls"));
  ASSERT_NE(calls, nullptr);
  const int before = calls();
  const HealthReport r = read_health(P2PNODE_FAKE_NVML);
  EXPECT_EQ(calls() - before, 16);
  EXPECT_EQ(*r.gpus[0].links[1].errors[0], 12u);  // from the batch
  EXPECT_EQ(*r.gpus[0].links[1].errors[3], 5u);   // one by one
  dlclose(lib);
}

TEST(AgentHealth, DocumentShape) {
  const UseBox box("h200-pair-l40s");
  const auto j = health_json(read_health(P2PNODE_FAKE_NVML), "0.1.0");
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(j["kind"], "health");
  EXPECT_EQ(j["nvml"]["available"], true);
  EXPECT_TRUE(j["nvml"]["reason"].is_null());
  const auto& l = j["gpus"][0]["links"][1];
  EXPECT_EQ(l["errors"]["replay"], 12);
  EXPECT_EQ(l["errors"]["crc_flit"], 3);
  EXPECT_TRUE(l["errors"]["ecc_data"].is_null());
  EXPECT_EQ(l["remote_pci_bus_id"], "0000:2a:00.0");
  EXPECT_TRUE(j["gpus"][0]["links"][2]["remote_pci_bus_id"].is_null());
}

TEST(AgentHealth, NoNvmlIsAnAnswerWithTheReason) {
  const HealthReport r = read_health("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.reason.find("NVML not available"), std::string::npos) << r.reason;
  const auto j = health_json(r, "0.1.0");
  EXPECT_EQ(j["nvml"]["available"], false);
  EXPECT_TRUE(j["gpus"].empty());
}

TEST(AgentHealth, ArgumentsAndDispatch) {
  const UseBox box("h200-pair-l40s");
  const char* h[] = {"p2pnode-agent", "--health", "--json"};
  EXPECT_TRUE(wants_health(3, const_cast<char**>(h)));
  const char* s[] = {"p2pnode-agent", "--json", "--cases", "latency"};
  EXPECT_FALSE(wants_health(4, const_cast<char**>(s)));
  const char* bad[] = {"p2pnode-agent", "--health", "--cases", "latency"};
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_health(4, const_cast<char**>(bad), "0.1.0", P2PNODE_FAKE_NVML), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("unexpected argument '--cases'"), std::string::npos);
  testing::internal::CaptureStdout();
  EXPECT_EQ(run_health(3, const_cast<char**>(h), "0.1.0", P2PNODE_FAKE_NVML), 0);
  const auto out = nlohmann::json::parse(testing::internal::GetCapturedStdout());
  EXPECT_EQ(out["gpus"].size(), 3u);
}

namespace {
// The stand-in NVML's driver state for one test (P2PNODE_FAKE_NVML_STATE), removed after it.
struct DriverState {
  p2pnode::test::TempDir dir{"fake-nvml"};
  std::string path = (dir / "state").string();
  explicit DriverState(const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    ::setenv("P2PNODE_FAKE_NVML_STATE", path.c_str(), 1);
  }
  ~DriverState() { ::unsetenv("P2PNODE_FAKE_NVML_STATE"); }
};
}  // namespace

// The driver's own verdict, every value NVML_FI_DEV_GET_GPU_RECOVERY_ACTION can take, by name.
TEST(AgentHealth, EveryRecoveryActionByName) {
  const UseBox box("h200-pair-l40s");
  const char* want[] = {"none",     "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset", "recover_imex_domain",
                        "unknown_6"};
  for (unsigned a = 0; a < 7; ++a) {
    DriverState s("gpu0.recovery=" + std::to_string(a) + "\n");
    const auto r = read_health(P2PNODE_FAKE_NVML);
    ASSERT_TRUE(r.gpus[0].recovery_action);
    EXPECT_EQ(*r.gpus[0].recovery_action, a);
    EXPECT_EQ(health_json(r, "0.1.0")["gpus"][0]["recovery_action"], want[a]);
  }
  // A driver without the field (before 570): no value, and why.
  const auto r = read_health(P2PNODE_FAKE_NVML);
  EXPECT_FALSE(r.gpus[2].recovery_action);
  EXPECT_NE(r.gpus[2].recovery_problem.find("not answered"), std::string::npos) << r.gpus[2].recovery_problem;
  EXPECT_TRUE(health_json(r, "0.1.0")["gpus"][2]["recovery_action"].is_null());
  EXPECT_EQ(health_json(r, "0.1.0")["gpus"][1]["recovery_action"], "drain_p2p");
}

TEST(AgentHealth, PcieCountersLinkAndMemory) {
  const UseBox box("h200-pair-l40s");
  DriverState s(
      "gpu0.replay=17\ngpu0.rollover=2\ngpu0.gen=3\ngpu0.width=8\ngpu1.pending=1\ngpu1.ecc=4\ngpu1.unc_rows=1\n");
  const auto r = read_health(P2PNODE_FAKE_NVML);
  const auto& p = r.gpus[0].pcie;
  EXPECT_EQ(*p.replay, 17u);
  EXPECT_EQ(*p.replay_rollover, 2u);
  EXPECT_EQ(*p.gen, 3u);
  EXPECT_EQ(*p.max_gen, 5u);
  EXPECT_EQ(*p.width, 8u);
  EXPECT_EQ(*p.max_width, 16u);
  const auto& m = r.gpus[1].memory;
  EXPECT_TRUE(*m.remap_pending);
  EXPECT_FALSE(*m.remap_failure);
  EXPECT_EQ(*m.remapped_uncorrectable, 1u);
  EXPECT_EQ(*m.volatile_uncorrected, 4u);
  EXPECT_FALSE(r.gpus[2].memory.remap_pending);  // no row remapper: not answered
  const auto j = health_json(r, "0.1.0");
  EXPECT_EQ(j["gpus"][0]["pcie"]["replay_rollover"], 2);
  EXPECT_EQ(j["gpus"][1]["memory"]["volatile_uncorrected_ecc"], 4);
  EXPECT_TRUE(j["gpus"][2]["memory"]["remap_pending"].is_null());
}

// Every ordered pair, each capability named as nvidia-smi topo -p2p reads it; a status changed by
// the driver shows in the next reading.
TEST(AgentHealth, P2pStatusOfEveryOrderedPair) {
  const UseBox box("h200-pair-l40s");
  auto r = read_health(P2PNODE_FAKE_NVML);
  ASSERT_EQ(r.p2p.size(), 6u);  // 3 GPUs: 6 ordered pairs
  auto j = health_json(r, "0.1.0")["p2p_status"];
  EXPECT_EQ(j[0]["gpu"], "0000:18:00.0");
  EXPECT_EQ(j[0]["peer_gpu"], "0000:2a:00.0");
  EXPECT_EQ(j[0]["read"], "ok");
  EXPECT_EQ(j[0]["nvlink"], "ok");
  EXPECT_EQ(j[0]["pci"], "not_supported");
  EXPECT_EQ(j[1]["peer_gpu"], "0000:c1:00.0");
  EXPECT_EQ(j[1]["write"], "chipset_not_supported");
  DriverState s("p2p.0.1.0=4\np2p.0.1.1=4\n");
  j = health_json(read_health(P2PNODE_FAKE_NVML), "0.1.0")["p2p_status"];
  EXPECT_EQ(j[0]["read"], "disabled_by_regkey");
  EXPECT_EQ(j[0]["write"], "disabled_by_regkey");
  EXPECT_EQ(j[2]["gpu"], "0000:2a:00.0");
  EXPECT_EQ(j[2]["read"], "ok");  // the other direction is its own reading
}
