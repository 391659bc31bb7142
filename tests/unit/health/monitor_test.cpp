// The monitor over several passes: what rises is a finding naming the device and its P2P paths;
// a first reading, a flat counter and an idle GPU's slow link are not.
#include "health/monitor.hpp"

#include <gtest/gtest.h>

#include "health/agent_health.hpp"

using namespace p2pnode;
using namespace p2pnode::health;

namespace {
// Two GPUs under one switch (00:01.0 -> 01:00.0 -> 02:00.0/02:01.0) and a drive under another root port.
PathIndex gpus_and_nvme_box() {
  return index_paths({{"0000:03:00.0", "gpu", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}, "pci0000:00", 0},
                      {"0000:04:00.0", "gpu", {"0000:00:01.0", "0000:01:00.0", "0000:02:01.0"}, "pci0000:00", 0},
                      {"0000:81:00.0", "nvme", {"0000:80:01.0"}, "pci0000:80", 1}});
}

DeviceReading dev(const std::string& bdf, const std::string& kind, std::uint64_t cor, std::uint64_t nonfatal = 0) {
  DeviceReading d;
  d.bdf = bdf;
  d.kind = kind;
  d.aer["correctable"] = {{{"RxErr", cor}, {"BadTLP", 0}}, cor};
  d.aer["nonfatal"] = {{{"CmpltTO", nonfatal}}, nonfatal};
  d.aer["fatal"] = {{}, 0};
  d.link.current_gts = d.link.max_gts = 16.0;
  d.link.current_width = d.link.max_width = 16;
  return d;
}

HealthSample sample(double t, std::vector<DeviceReading> devs) {
  HealthSample s;
  s.mono_s = t;
  s.devices = std::move(devs);
  s.xid.source = "/dev/kmsg";
  s.agent.skipped = "no agent";
  return s;
}

const Finding* find(const HealthMonitor& m, const std::string& check, const std::string& subject) {
  for (const auto& f : m.findings()) {
    if (f.check == check && f.subject == subject) { return &f; }
  }
  return nullptr;
}
}  // namespace

TEST(HealthPaths, PairsAndEndpointsThroughTheSwitch) {
  const PathIndex p = gpus_and_nvme_box();
  EXPECT_EQ(p.devices.size(), 8u);  // 3 endpoints + 5 bridges
  EXPECT_EQ(p.kind.at("0000:02:00.0"), "bridge");
  // The switch's downstream port 02:00.0 carries GPU 03 to GPU 04 and GPU 03 to the drive.
  const auto& pairs = p.pairs.at("0000:02:00.0");
  EXPECT_TRUE(pairs.count("0000:03:00.0-0000:04:00.0"));
  EXPECT_TRUE(pairs.count("0000:03:00.0-0000:81:00.0"));
  EXPECT_FALSE(pairs.count("0000:04:00.0-0000:81:00.0"));
  // The root port 00:01.0 is not between the two GPUs (they meet in the switch) but is on the way to the drive.
  EXPECT_FALSE(p.pairs.at("0000:00:01.0").count("0000:03:00.0-0000:04:00.0"));
  EXPECT_TRUE(p.pairs.at("0000:00:01.0").count("0000:04:00.0-0000:81:00.0"));
  EXPECT_EQ(p.endpoints.at("0000:80:01.0"), (std::set<std::string>{"0000:81:00.0"}));
  EXPECT_TRUE(p.idle_links.count("0000:03:00.0"));
  EXPECT_TRUE(p.idle_links.count("0000:02:00.0"));
  EXPECT_FALSE(p.idle_links.count("0000:01:00.0"));
}

// Correctable errors are judged by rate (thresholds.cpp: 8 a minute, DCGM's PCIe replay limit): a
// few, as healthy links show, are no finding; a steady stream is, naming the bridge's paths.
TEST(HealthMonitor, CorrectableRateOnABridgeNamesItsPaths) {
  HealthMonitor m(600);
  const PathIndex p = gpus_and_nvme_box();
  m.update(sample(0, {dev("0000:02:00.0", "bridge", 7), dev("0000:81:00.0", "nvme", 0)}), p);
  EXPECT_TRUE(m.findings().empty()) << "a first reading proves no rise, whatever the count";
  m.update(sample(10, {dev("0000:02:00.0", "bridge", 7), dev("0000:81:00.0", "nvme", 0)}), p);
  EXPECT_TRUE(m.findings().empty());
  m.update(sample(20, {dev("0000:02:00.0", "bridge", 9), dev("0000:81:00.0", "nvme", 0)}), p);
  EXPECT_TRUE(m.findings().empty()) << "2 correctable errors: what healthy links show";
  EXPECT_EQ(m.view()["devices"][0]["aer"]["correctable"]["rise"], 2);
  m.update(sample(300, {dev("0000:02:00.0", "bridge", 30), dev("0000:81:00.0", "nvme", 0)}), p);
  EXPECT_TRUE(m.findings().empty()) << "23 in 5 minutes: 4.6 a minute, below 8";
  m.update(sample(310, {dev("0000:02:00.0", "bridge", 59), dev("0000:81:00.0", "nvme", 0)}), p);
  ASSERT_EQ(m.findings().size(), 1u) << "52 in 310 s: 10 a minute";
  const Finding& f = m.findings()[0];
  EXPECT_EQ(f.check, "health.aer");
  EXPECT_EQ(f.subject, "0000:02:00.0");
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_NE(
      f.summary.find("52 correctable PCIe AER errors in the last 10m on bridge 0000:02:00.0 (RxErr +52), 10.1/min "
                     "(limit 8/min)"),
      std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("0000:03:00.0-0000:04:00.0"), std::string::npos) << f.summary;
  EXPECT_EQ(f.observed["rise"], 52);
  EXPECT_EQ(f.observed["total"], 59);
  EXPECT_EQ(f.observed["pairs"].size(), 2u);
  // It stays while the rate over the window is above the limit, then clears.
  m.update(sample(360, {dev("0000:02:00.0", "bridge", 59), dev("0000:81:00.0", "nvme", 0)}), p);
  EXPECT_EQ(m.findings().size(), 1u);
  m.update(sample(1000, {dev("0000:02:00.0", "bridge", 59), dev("0000:81:00.0", "nvme", 0)}), p);
  EXPECT_TRUE(m.findings().empty());
}

TEST(HealthMonitor, UncorrectableIsAnErrorOnTheDrivesRootPort) {
  HealthMonitor m(600);
  const PathIndex p = index_paths({{"0000:01:00.0", "nvme", {"0000:00:02.0"}, "pci0000:00", -1}});
  m.update(sample(0, {dev("0000:00:02.0", "bridge", 0, 0)}), p);
  m.update(sample(1, {dev("0000:00:02.0", "bridge", 0, 1)}), p);
  const Finding* f = find(m, "health.aer", "0000:00:02.0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::error);
  EXPECT_EQ(f->observed["severity"], "nonfatal");
  EXPECT_NE(f->summary.find("on the path of 0000:01:00.0"), std::string::npos) << f->summary;
  EXPECT_EQ(f->observed["on_paths_of"], nlohmann::json::array({"0000:01:00.0"}));
  const auto v = m.view();
  EXPECT_EQ(v["devices"][0]["aer"]["nonfatal"]["total"], 1);
  EXPECT_EQ(v["devices"][0]["aer"]["nonfatal"]["rise"], 1);
}

TEST(HealthMonitor, LinkBelowMaximumButNotAnIdleGpusSpeed) {
  HealthMonitor m;
  const PathIndex p = gpus_and_nvme_box();
  DeviceReading gpu = dev("0000:03:00.0", "gpu", 0), port = dev("0000:02:00.0", "bridge", 0),
                up = dev("0000:01:00.0", "bridge", 0), narrow = dev("0000:04:00.0", "gpu", 0);
  gpu.link.current_gts = 2.5;  // idle GPU: Gen1
  gpu.link_idles = port.link_idles = true;
  port.link.current_gts = 2.5;
  up.link.current_gts = 8.0;  // the switch's uplink has no reason to slow down
  narrow.link_idles = true;
  narrow.link.current_width = 8;
  m.update(sample(0, {gpu, port, up, narrow}), p);
  EXPECT_EQ(find(m, "health.link", "0000:03:00.0"), nullptr);
  EXPECT_EQ(find(m, "health.link", "0000:02:00.0"), nullptr);
  const Finding* f = find(m, "health.link", "0000:01:00.0");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->summary.find("speed 8 GT/s of 16 GT/s"), std::string::npos) << f->summary;
  const Finding* w = find(m, "health.link", "0000:04:00.0");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->summary.find("width x8 of x16"), std::string::npos) << w->summary;
  EXPECT_EQ(m.view()["devices"][3]["link_degraded"], true);
}

TEST(HealthMonitor, NvlinkCountersAndALinkThatWentDown) {
  HealthMonitor m;
  const PathIndex p = gpus_and_nvme_box();
  auto doc = [](int replay, bool active) {
    return "{\"schema_version\":1,\"nvml\":{\"available\":true,\"driver_version\":\"580.95.05\"},\"gpus\":["
           "{\"index\":0,\"pci_bus_id\":\"0000:03:00.0\",\"links\":["
           "{\"link\":0,\"active\":true,\"remote_pci_bus_id\":\"0000:04:00.0\",\"errors\":{\"replay\":" +
           std::to_string(replay) +
           ",\"recovery\":0,\"crc_flit\":0,\"crc_data\":0,\"ecc_data\":null}},"
           "{\"link\":1,\"active\":" +
           (active ? "true" : "false") + ",\"errors\":{\"replay\":0,\"recovery\":0,\"crc_flit\":0,\"crc_data\":0}}]}]}";
  };
  auto s = sample(0, {});
  s.agent = decode_agent_health(doc(4, true)).value();
  m.update(s, p);
  EXPECT_TRUE(m.findings().empty());
  s.mono_s = 10;
  s.agent = decode_agent_health(doc(6, true)).value();
  m.update(s, p);
  const Finding* f = find(m, "health.nvlink", "0000:03:00.0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::warning);
  EXPECT_NE(f->summary.find("NVLink 0 of GPU 0000:03:00.0: replay +2 errors"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("far end 0000:04:00.0"), std::string::npos);
  s.mono_s = 20;
  s.agent = decode_agent_health(doc(6, false)).value();
  m.update(s, p);
  bool down = false;
  for (const auto& g : m.findings()) {
    if (g.check == "health.nvlink" && g.observed["link"] == 1) {
      down = true;
      EXPECT_EQ(g.severity, Severity::error);
      EXPECT_NE(g.summary.find("went down"), std::string::npos);
    }
  }
  EXPECT_TRUE(down);
  EXPECT_EQ(m.view()["nvlink"]["gpus"][0]["active_links"], 1);
  EXPECT_TRUE(m.view()["nvlink"]["gpus"][0]["links"][0]["errors"]["ecc_data"].is_null());
}

TEST(HealthMonitor, XidEventsInTheWindowNameTheGpuAndAreCountedOnce) {
  HealthMonitor m(600);
  const PathIndex p = gpus_and_nvme_box();
  auto s = sample(0, {});
  s.xid.uptime_s = 1000;
  s.xid.events = {
      *parse_xid_line(
          "4,10,990000000,-;NVRM: Xid (PCI:0000:03:00): 79, pid=77, name=train, GPU has fallen off the bus."),
      *parse_xid_line("4,11,100000000,-;NVRM: Xid (PCI:0000:04:00): 74, NVLink: fatal error on link 0"),
      *parse_xid_line("4,12,995000000,-;NVRM: Xid (PCI:0000:aa:00): 31, pid=5, MMU Fault")};
  m.update(s, p);
  const Finding* f = find(m, "health.xid", "0000:03:00.0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::error);
  EXPECT_NE(f->summary.find("Xid 79 on GPU 0000:03:00.0: GPU has fallen off the bus"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("0000:03:00.0-0000:04:00.0"), std::string::npos);
  EXPECT_EQ(f->observed["processes"][0]["process"], "train");
  // The 74 happened 900 s before now: counted, but outside the 10 minute window.
  EXPECT_EQ(find(m, "health.xid", "0000:04:00.0"), nullptr);
  const Finding* other = find(m, "health.xid", "0000:aa:00.0");
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other->summary.find("not a GPU of the last discovery"), std::string::npos);
  // The same records again (a recording read whole each pass) are not counted twice.
  s.mono_s = 10;
  m.update(s, p);
  const auto counts = m.view()["xid"]["counts"];
  ASSERT_EQ(counts.size(), 3u);
  for (const auto& c : counts) { EXPECT_EQ(c["count"], 1) << c.dump(); }
  EXPECT_EQ(m.view()["xid"]["recent"].size(), 2u);
}

TEST(AgentHealthDoc, StrictAndBounded) {
  EXPECT_FALSE(decode_agent_health("not json"));
  EXPECT_FALSE(decode_agent_health("{\"schema_version\":3,\"nvml\":{\"available\":true},\"gpus\":[]}"));
  auto r = decode_agent_health(
      "{\"schema_version\":1,\"nvml\":{\"available\":true},\"gpus\":[{\"pci_bus_id\":\"0000:03:00.0\",\"links\":[{"
      "\"link\":0,\"active\":true,\"errors\":{\"replay\":-1}}]}]}");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("gpus[0].links[0].errors.replay is not a count"), std::string::npos)
      << r.error().message;
  auto none = decode_agent_health(
      "{\"schema_version\":1,\"nvml\":{\"available\":false,\"reason\":\"NVML not available: libnvidia-ml.so.1: cannot "
      "open shared object file\"},\"gpus\":[]}");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->read);
  EXPECT_NE(none->skipped.find("libnvidia-ml.so.1"), std::string::npos);
}

TEST(HealthText, WindowAndRises) {
  EXPECT_EQ(window_text(600), "10m");
  EXPECT_EQ(window_text(7200), "2h");
  EXPECT_EQ(window_text(90), "90s");
  EXPECT_EQ(describe_rises({{"RxErr", 2}, {"BadTLP", 0}, {"Timeout", 1}}), "RxErr +2, Timeout +1");
}

TEST(HealthMonitor, AnXidStormIsBounded) {
  HealthMonitor m(600);
  auto s = sample(0, {});
  s.xid.uptime_s = 1000;
  for (int i = 0; i < 5000; ++i) {
    s.xid.events.push_back(*parse_xid_line("4," + std::to_string(100 + i) +
                                           ",999000000,-;NVRM: Xid (PCI:0000:03:00): 13, pid=5, Graphics Exception"));
  }
  m.update(s, gpus_and_nvme_box());
  const auto v = m.view();
  EXPECT_EQ(v["xid"]["recent"].size(), 50u);
  EXPECT_EQ(v["xid"]["counts"][0]["count"], 5000) << "every record is counted";
  const auto& f = m.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].observed["count"], 4096) << "the window keeps the newest 4096";
}
