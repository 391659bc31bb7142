// The health pass against a hand-made root: AER files and links in sysfs, a /dev/kmsg recording,
// /proc/uptime, an agent answered by a ScriptedRunner. Pass after pass, what rises is a finding;
// the agent is not run without GPUs, when the config turns NVLink off, or while a pass is running.
#include "engine/health_pass.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "engine/health_metrics.hpp"
#include "unit/tls/test_pki.hpp"

using namespace p2pnode;
using namespace p2pnode::engine;
using nlohmann::json;

namespace {
void put(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

struct HealthBox {
  test::TempDir dir{"health"};
  sys::SysRoot root{dir.path()};
  sys::ScriptedRunner runner;
  DaemonConfig config;
  // A GPU under a switch port and a drive under a root port, as devices_view records them.
  json devices = json::parse(R"({"gpus": [{"bdf": "0000:03:00.0", "root_complex": "pci0000:00", "numa_node": 0,
                                            "upstream_bridges": ["0000:00:01.0", "0000:02:00.0"]},
                                           {"bdf": "0000:04:00.0", "root_complex": "pci0000:00", "numa_node": 0,
                                            "upstream_bridges": ["0000:00:01.0", "0000:02:01.0"]}],
                                  "nvme": [{"bdf": "0000:81:00.0", "root_complex": "pci0000:80", "numa_node": 1,
                                            "upstream_bridges": ["0000:80:01.0"]}], "bridges": []})");
  HealthBox() {
    for (const char* bdf : {"0000:03:00.0", "0000:04:00.0", "0000:81:00.0", "0000:00:01.0", "0000:02:00.0",
                            "0000:02:01.0", "0000:80:01.0"}) {
      link(bdf, "16.0 GT/s PCIe", 16);
    }
    cor("0000:80:01.0", 0);
    put(dir.path() / "proc/uptime", "5000.00 9000.00\n");
    put(dir.path() / "dev/kmsg", "6,1,0,-;Linux version 6.8.0\n");
    config.agent_path = "/usr/libexec/p2pnode/p2pnode-agent";
    put(dir.path() / "usr/libexec/p2pnode/p2pnode-agent", "#!/bin/sh\n");
  }
  void link(const std::string& bdf, const std::string& speed, int width) {
    const auto d = dir.path() / "sys/bus/pci/devices" / bdf;
    put(d / "current_link_speed", speed + "\n");
    put(d / "max_link_speed", "16.0 GT/s PCIe\n");
    put(d / "current_link_width", std::to_string(width) + "\n");
    put(d / "max_link_width", "16\n");
  }
  void cor(const std::string& bdf, int n) {
    const auto d = dir.path() / "sys/bus/pci/devices" / bdf;
    put(d / "aer_dev_correctable",
        "RxErr " + std::to_string(n) + "\nBadTLP 0\nTOTAL_ERR_COR " + std::to_string(n) + "\n");
    put(d / "aer_dev_nonfatal", "Undefined 0\nCmpltTO 0\nTOTAL_ERR_NONFATAL 0\n");
    put(d / "aer_dev_fatal", "Undefined 0\nTOTAL_ERR_FATAL 0\n");
  }
};

const json* finding(const json& body, const std::string& check, const std::string& subject) {
  for (const auto& f : body["findings"]) {
    if (f["check"] == check && f["subject"] == subject) { return &f; }
  }
  return nullptr;
}

std::string health_doc(int replay) {
  return R"({"schema_version":1,"kind":"health","agent_version":"t","nvml":{"available":true,"driver_version":"580.95.05"},
             "gpus":[{"index":0,"pci_bus_id":"0000:03:00.0","name":"NVIDIA H100","links":[
               {"link":0,"active":true,"remote_pci_bus_id":"0000:04:00.0","errors":{"replay":)" +
         std::to_string(replay) + R"(,"recovery":0,"crc_flit":0,"crc_data":0,"ecc_data":0}}]}]})";
}
}  // namespace

TEST(HealthPass, EndpointsFromTheDevicesView) {
  HealthBox b;
  const auto e = endpoints_from_devices(b.devices);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].kind, "gpu");
  EXPECT_EQ(e[2].kind, "nvme");
  EXPECT_EQ(e[2].upstream, std::vector<std::string>{"0000:80:01.0"});
  EXPECT_TRUE(endpoints_from_devices(json::object()).empty());
  EXPECT_TRUE(endpoints_from_devices(json::parse(R"({"gpus": [{"nobdf": 1}], "nvme": 3})")).empty());
}

TEST(HealthPass, AerRiseOnTheDrivesRootPortAcrossPasses) {
  HealthBox b;
  int calls = 0;
  b.runner.on({b.root.host_path(b.config.agent_path).string(), "--health", "--json"}, [&](const sys::Command& c) {
    EXPECT_EQ(c.timeout, std::chrono::seconds(5));
    return sys::exited_with(0, health_doc(calls++ < 1 ? 3 : 5));
  });
  b.config.health.nvlink_interval = std::chrono::milliseconds(0);  // the agent on every pass
  HealthPass pass(b.root, &b.runner);
  json h = pass.run(b.config, b.devices, "", nullptr);
  EXPECT_EQ(h["passes"], 1);
  EXPECT_EQ(h["devices"].size(), 7u);
  EXPECT_TRUE(h["findings"].empty()) << h["findings"].dump();
  EXPECT_TRUE(h["problem"].is_null());
  EXPECT_EQ(h["nvlink"]["read"], true);
  b.cor("0000:80:01.0", 20);  // 20 correctable errors within a minute: over 8 a minute
  h = pass.run(b.config, b.devices, "", nullptr);
  const json* f = finding(h, "health.aer", "0000:80:01.0");
  ASSERT_NE(f, nullptr) << h["findings"].dump();
  EXPECT_EQ((*f)["observed"]["pairs"], json::array({"0000:03:00.0-0000:81:00.0", "0000:04:00.0-0000:81:00.0"}));
  const json* n = finding(h, "health.nvlink", "0000:03:00.0");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(calls, 2);
  const std::string m = render_health_metrics(h);
  EXPECT_NE(m.find(R"(p2pnode_pcie_aer_errors_total{device="0000:80:01.0",kind="bridge",type="correctable"} 20)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(R"(p2pnode_nvlink_errors_total{counter="replay",gpu="0000:03:00.0"} 5)"), std::string::npos) << m;
  EXPECT_NE(m.find(R"(p2pnode_health_finding{check="health.aer",device="0000:80:01.0",severity="warning"} 1)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("p2pnode_health_last_pass_timestamp_seconds"), std::string::npos);
}

TEST(HealthPass, TheAgentRunsOncePerNvlinkInterval) {
  HealthBox b;
  int calls = 0;
  b.runner.on({b.root.host_path(b.config.agent_path).string(), "--health"},
              [&](const sys::Command&) { return sys::exited_with(0, health_doc(3 + calls++)); });
  HealthPass pass(b.root, &b.runner);
  json h;
  for (int i = 0; i < 3; ++i) { h = pass.run(b.config, b.devices, "", nullptr); }
  EXPECT_EQ(calls, 1) << "the default nvlink_interval is a minute";
  EXPECT_EQ(h["nvlink"]["read"], true);
  EXPECT_TRUE(h["nvlink"]["read_unix"].is_number());
  EXPECT_EQ(h["nvlink"]["gpus"][0]["links"][0]["errors"]["replay"], 3);
  EXPECT_EQ(finding(h, "health.nvlink", "0000:03:00.0"), nullptr);
}

TEST(HealthPass, NvlinkIsSkippedWithTheReason) {
  HealthBox b;
  HealthPass pass(b.root, &b.runner);
  json h = pass.run(b.config, b.devices, "a reconcile pass is running", nullptr);
  EXPECT_EQ(h["nvlink"]["skipped"], "a reconcile pass is running");
  b.config.health.nvlink = false;
  h = pass.run(b.config, b.devices, "", nullptr);
  EXPECT_NE(h["nvlink"]["skipped"].get<std::string>().find("health.nvlink: false"), std::string::npos);
  b.config.health.nvlink = true;
  json drives_only = b.devices;
  drives_only["gpus"] = json::array();
  h = pass.run(b.config, drives_only, "", nullptr);
  EXPECT_EQ(h["nvlink"]["skipped"], "no GPU in the last discovery");
  HealthPass no_runner(b.root, nullptr);
  h = no_runner.run(b.config, b.devices, "", nullptr);
  EXPECT_NE(h["nvlink"]["skipped"].get<std::string>().find("no runner"), std::string::npos);
  EXPECT_EQ(b.runner.calls().size(), 0u);
  b.config.agent_path = "/nonexistent/agent";
  h = pass.run(b.config, b.devices, "", nullptr);
  EXPECT_NE(h["nvlink"]["skipped"].get<std::string>().find("no agent at"), std::string::npos);
}

TEST(HealthPass, AnAgentThatFailsOrLiesIsAReason) {
  HealthBox b;
  const std::string agent = b.root.host_path(b.config.agent_path).string();
  b.runner.on({agent, "--health"}, sys::exited_with(1, "", "cannot load NVML\n"));
  HealthPass pass(b.root, &b.runner);
  json h = pass.run(b.config, b.devices, "", nullptr);
  EXPECT_NE(h["nvlink"]["skipped"].get<std::string>().find("exit 1: cannot load NVML"), std::string::npos)
      << h["nvlink"].dump();
  sys::ScriptedRunner liar;
  liar.on({agent, "--health"},
          sys::exited_with(0, R"({"schema_version":1,"nvml":{"available":true},"gpus":[{"links":[]}]})"));
  HealthPass pass2(b.root, &liar);
  h = pass2.run(b.config, b.devices, "", nullptr);
  EXPECT_NE(h["nvlink"]["skipped"].get<std::string>().find("gpus[0].pci_bus_id missing"), std::string::npos)
      << h["nvlink"].dump();
}

TEST(HealthPass, XidFromTheRecordedKmsgAndALinkDowngrade) {
  HealthBox b;
  put(b.dir.path() / "dev/kmsg",
      "6,1,0,-;Linux version 6.8.0\n"
      "4,77,4900000000,-;NVRM: Xid (PCI:0000:04:00): 79, pid=9, name=train, GPU has fallen off the bus.\n"
      " SUBSYSTEM=pci\n");
  b.link("0000:00:01.0", "16.0 GT/s PCIe", 8);
  HealthPass pass(b.root, nullptr);
  json h = pass.run(b.config, b.devices, "", nullptr);
  const json* x = finding(h, "health.xid", "0000:04:00.0");
  ASSERT_NE(x, nullptr) << h.dump();
  EXPECT_EQ((*x)["severity"], "error");
  EXPECT_EQ(h["xid"]["recent"][0]["age_s"], 100);
  const json* l = finding(h, "health.link", "0000:00:01.0");
  ASSERT_NE(l, nullptr);
  EXPECT_NE((*l)["summary"].get<std::string>().find("width x8 of x16"), std::string::npos);
  h = pass.run(b.config, b.devices, "", nullptr);
  EXPECT_EQ(h["xid"]["counts"][0]["count"], 1) << "a recording read again is not counted again";
}

// The driver's words only, through the real read: a kernel segfault record whose file
// name carries the Xid text and a user-facility record with the same text give no finding; the
// driver's own Xid record gives an error finding.
TEST(HealthPass, OnlyTheDriversXidRecordIsAFinding) {
  HealthBox b;
  const std::string xid = "NVRM: Xid (PCI:0000:04:00): 79, pid=9, name=train, GPU has fallen off the bus.";
  put(b.dir.path() / "dev/kmsg",
      "6,1,0,-;Linux version 6.8.0\n"
      "6,80,4900000000,-;a.out[4242]: segfault at 0 ip 000055d4c1e0113d sp 00007ffd1b7a8f40 error 4 in " +
          xid +
          "[55d4c1e01000+1000] likely on CPU 3 (core 3, socket 0)\n"
          "12,81,4900000001,-;" +
          xid + "\n");
  HealthPass pass(b.root, nullptr);
  json h = pass.run(b.config, b.devices, "", nullptr);
  EXPECT_EQ(finding(h, "health.xid", "0000:04:00.0"), nullptr) << h["findings"].dump();
  EXPECT_EQ(finding(h, "health.kernel", "0000:04:00.0"), nullptr) << h["findings"].dump();
  EXPECT_TRUE(h["xid"]["recent"].empty()) << h["xid"].dump();
  put(b.dir.path() / "dev/kmsg", "6,1,0,-;Linux version 6.8.0\n4,82,4900000002,-;" + xid + "\n");
  h = pass.run(b.config, b.devices, "", nullptr);
  const json* x = finding(h, "health.xid", "0000:04:00.0");
  ASSERT_NE(x, nullptr) << h.dump();
  EXPECT_EQ((*x)["severity"], "error");
}

TEST(HealthPass, NoDevicesNoKmsgSaySo) {
  test::TempDir dir("health-empty");
  sys::SysRoot root(dir.path());
  DaemonConfig c;
  HealthPass pass(root, nullptr);
  json h = pass.run(c, json::object(), "", nullptr);
  EXPECT_EQ(h["problem"], "no GPU or NVMe drive in the last discovery: nothing to watch");
  // Before the first discovery (no devices recorded yet) it says so, not that the box has none.
  EXPECT_EQ(pass.run(c, json(nullptr), "", nullptr)["problem"],
            "the first discovery has not finished: nothing to watch yet");
  EXPECT_NE(h["xid"]["problem"].get<std::string>().find("cannot open /dev/kmsg"), std::string::npos);
  EXPECT_EQ(health_body_idle(c)["passes"], 0);
  c.health.enabled = false;
  EXPECT_EQ(render_health_metrics(health_body_idle(c)), "");
}
