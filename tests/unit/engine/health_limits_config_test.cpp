// health.limits in the daemon's configuration: a site's own figures over the defaults, refused with
// file, line and field when they are not limits, and judged by the monitor.
#include "engine/health_limits_config.hpp"

#include <gtest/gtest.h>

#include "engine/config.hpp"
#include "health/monitor.hpp"

using namespace p2pnode;

TEST(HealthLimitsConfig, DefaultsUnlessSetEachWithItsSource) {
  auto r = engine::load_config_text(
      "health:\n  limits:\n    pcie:\n      replay: {per_minute: 2}\n"
      "    nvlink:\n      crc_data: {per_second: 10, severity: error}\n"
      "    xid:\n      ignore: [13, 43]\n      severity: {63: error}\n",
      "p2pnode.yaml");
  ASSERT_TRUE(r.config) << r.diagnostics.format();
  const auto& l = r.config->health.limits;
  EXPECT_DOUBLE_EQ(l.pcie_replay.per_second, 2.0 / 60);
  EXPECT_EQ(l.pcie_replay.source.rfind("p2pnode.yaml health.limits.pcie.replay (the default: DCGM: 8 PCIe replays", 0),
            0u)
      << l.pcie_replay.source;
  EXPECT_DOUBLE_EQ(l.nvlink_limit("crc_data")->per_second, 10);
  EXPECT_EQ(l.nvlink_limit("crc_data")->severity, Severity::error);
  EXPECT_DOUBLE_EQ(l.nvlink_limit("ecc_data")->per_second, 1000);  // not set: the default
  EXPECT_EQ(l.nvlink_limit("ecc_data")->source, health::HealthLimits::defaults().nvlink_limit("ecc_data")->source);
  EXPECT_EQ(l.xid_ignored, (std::set<int>{13, 43}));
  EXPECT_EQ(l.xid_severity.at(63), Severity::error);
  // No health.limits: today's figures.
  auto none = engine::load_config_text("listen: 127.0.0.1:9470\n", "p2pnode.yaml");
  ASSERT_TRUE(none.config);
  EXPECT_DOUBLE_EQ(none.config->health.limits.aer_correctable.per_second, 8.0 / 60);
}

TEST(HealthLimitsConfig, ABadLimitIsRefusedNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"health:\n  limits:\n    pcie:\n      replay: {per_minute: -3}\n",
       "p2pnode.yaml:4:28: health.limits.pcie.replay.per_minute: expected a rate of at least 0"},
      {"health:\n  limits:\n    nvlink:\n      crc_dat: {per_second: 1}\n",
       "p2pnode.yaml:4:7: health.limits.nvlink.crc_dat: unknown key 'crc_dat'; did you mean 'crc_data'?"},
      {"health:\n  limits:\n    aer:\n      fatal: {severity: page}\n",
       "p2pnode.yaml:4:25: health.limits.aer.fatal.severity: expected one of"},
      {"health:\n  limits:\n    xid:\n      ignore: [79, lots]\n",
       "p2pnode.yaml:4:20: health.limits.xid.ignore: expected an Xid number (1-1000), found 'lots'"},
      {"health:\n  limits:\n    pcie:\n      replay: {per_second: 1, per_minute: 60}\n",
       "p2pnode.yaml:4:15: health.limits.pcie.replay: expected per_second or per_minute, not both"},
  };
  for (const auto& [text, want] : cases) {
    const auto r = engine::load_config_text(text, "p2pnode.yaml");
    EXPECT_FALSE(r.config) << text;
    ASSERT_FALSE(r.diagnostics.empty()) << text;
    EXPECT_EQ(r.diagnostics.list().front().format().rfind(want, 0), 0u) << r.diagnostics.format();
  }
}

// The monitor judges by the configured limits: an ignored Xid is counted but is no finding; a site's
// severity replaces the table's.
TEST(HealthLimitsConfig, TheMonitorUsesThem) {
  health::HealthLimits l = health::HealthLimits::defaults();
  l.xid_ignored = {31};
  l.xid_severity[79] = Severity::warning;
  health::HealthMonitor m(600);
  m.set_limits(l);
  const auto paths = health::index_paths({{"0000:03:00.0", "gpu", {"0000:00:01.0"}, "pci0000:00", 0}});
  health::HealthSample s;
  s.mono_s = 0;
  s.xid.source = "/dev/kmsg";
  s.xid.uptime_s = 1000;
  s.agent.skipped = "no agent";
  s.xid.events = {
      *health::parse_xid_line("4,10,990000000,-;NVRM: Xid (PCI:0000:03:00): 79, GPU has fallen off the bus."),
      *health::parse_xid_line("4,11,995000000,-;NVRM: Xid (PCI:0000:03:00): 31, pid=5, MMU Fault")};
  m.update(s, paths);
  int xid_findings = 0;
  for (const auto& f : m.findings()) {
    if (f.check != "health.xid") { continue; }
    ++xid_findings;
    EXPECT_EQ(f.observed["xid"], 79);
    EXPECT_EQ(f.severity, Severity::warning);  // the site's word, not the table's error
  }
  EXPECT_EQ(xid_findings, 1);
}
