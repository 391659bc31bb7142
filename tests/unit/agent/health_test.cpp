// `p2pnode-agent --health` through a stand-in NVML (fake_nvml_health.cpp) and without any NVML:
// the document the daemon decodes (daemon/health/agent_health.cpp), per GPU and link.
#include "p2pnode/agent/health.hpp"

#include <gtest/gtest.h>

using namespace p2pnode::agent;

TEST(AgentHealth, ReadsLinksAndCountersThroughNvml) {
  const HealthReport r = read_health(P2PNODE_FAKE_NVML_HEALTH);
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

TEST(AgentHealth, DocumentShape) {
  const auto j = health_json(read_health(P2PNODE_FAKE_NVML_HEALTH), "0.1.0");
  EXPECT_EQ(j["schema_version"], 1);
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
  const char* h[] = {"p2pnode-agent", "--health", "--json"};
  EXPECT_TRUE(wants_health(3, const_cast<char**>(h)));
  const char* s[] = {"p2pnode-agent", "--json", "--cases", "latency"};
  EXPECT_FALSE(wants_health(4, const_cast<char**>(s)));
  const char* bad[] = {"p2pnode-agent", "--health", "--cases", "latency"};
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_health(4, const_cast<char**>(bad), "0.1.0", P2PNODE_FAKE_NVML_HEALTH), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("unexpected argument '--cases'"), std::string::npos);
  testing::internal::CaptureStdout();
  EXPECT_EQ(run_health(3, const_cast<char**>(h), "0.1.0", P2PNODE_FAKE_NVML_HEALTH), 0);
  const auto out = nlohmann::json::parse(testing::internal::GetCapturedStdout());
  EXPECT_EQ(out["gpus"].size(), 3u);
}
