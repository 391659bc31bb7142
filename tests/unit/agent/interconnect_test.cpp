// NVML's per-link records turned into pairs: direct NVLinks, NVSwitch boxes, PCIe-only pairs,
// bus id spelling, and the JSON the daemon reads.
#include "p2pnode/agent/interconnect.hpp"
#include "p2pnode/agent/report.hpp"

#include <gtest/gtest.h>

using namespace p2pnode::agent;

TEST(Interconnect, BusIdsAsSysfsSpellsThem) {
  EXPECT_EQ(normalize_bus_id("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_bus_id("0000:00:06.0"), "0000:00:06.0");
  EXPECT_EQ(normalize_bus_id("3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_bus_id(std::string("00000001:C1:1F.7\0junk", 21)), "0001:c1:1f.7");
  EXPECT_EQ(normalize_bus_id(""), "");
  EXPECT_EQ(normalize_bus_id("not a bus id"), "");
  EXPECT_EQ(normalize_bus_id("100000000:00:00.0"), "");
}

TEST(Interconnect, NvswitchBoxEveryPairReachable) {
  // 2x H200 on an NVSwitch baseboard: 18 links each, all to switches (bus ids no GPU has).
  const std::vector<std::string> ids = {"0000:00:06.0", "0000:00:07.0"};
  std::vector<std::vector<NvLinkRecord>> links(2);
  for (unsigned l = 0; l < 18; ++l) {
    links[0].push_back({l, 6, "0000:ff:0" + std::to_string(l % 4) + ".0"});
    links[1].push_back({l, 6, "0000:fe:0" + std::to_string(l % 4) + ".0"});
  }
  auto pairs = pairs_from_links(ids, links, [](int, int) { return true; });
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].nvlinks, 18);
  EXPECT_EQ(pairs[0].nvlink_via, "nvswitch");
  EXPECT_EQ(pairs[0].nvlink_version, 6u);
  // The driver says the pair cannot use NVLink: PCIe.
  pairs = pairs_from_links(ids, links, [](int, int) { return false; });
  EXPECT_EQ(pairs[0].nvlinks, 0);
  EXPECT_EQ(pairs[0].nvlink_via, "");
}

TEST(Interconnect, DirectLinksCountOnce) {
  // Three GPUs: 0-1 bridged by 4 links (seen from both ends), 2 on PCIe only.
  const std::vector<std::string> ids = {"0000:01:00.0", "0000:02:00.0", "0000:03:00.0"};
  std::vector<std::vector<NvLinkRecord>> links(3);
  for (unsigned l = 0; l < 4; ++l) {
    links[0].push_back({l, 4, ids[1]});
    links[1].push_back({l, 4, ids[0]});
  }
  const auto pairs = pairs_from_links(ids, links, [](int, int) { return false; });
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].a, 0);
  EXPECT_EQ(pairs[0].b, 1);
  EXPECT_EQ(pairs[0].nvlinks, 4);
  EXPECT_EQ(pairs[0].nvlink_via, "direct");
  EXPECT_EQ(pairs[1].nvlinks, 0);  // 0-2
  EXPECT_EQ(pairs[2].nvlinks, 0);  // 1-2
}

TEST(Interconnect, StatusNamesAndJson) {
  EXPECT_STREQ(p2p_status_name(0), "ok");
  EXPECT_STREQ(p2p_status_name(1), "chipset_not_supported");
  EXPECT_STREQ(p2p_status_name(3), "ioh_topology_not_supported");
  EXPECT_STREQ(p2p_status_name(99), "unknown");
  Interconnect ic;
  ic.source = "nvml";
  PairInterconnect p;
  p.a = 0;
  p.b = 1;
  p.nvlinks = 18;
  p.nvlink_version = 6;
  p.nvlink_via = "nvswitch";
  p.p2p_status = {{"read", "ok"}};
  ic.pairs.push_back(p);
  const auto j = to_json(ic);
  EXPECT_EQ(j["source"], "nvml");
  EXPECT_TRUE(j["reason"].is_null());
  EXPECT_EQ(j["pairs"][0]["link"], "NV18");
  EXPECT_EQ(j["pairs"][0]["p2p_status"]["read"], "ok");
  Interconnect none;
  none.reason = "NVML not available: libnvidia-ml.so.1: cannot open shared object file; PCIe assumed for every pair";
  EXPECT_EQ(to_json(none)["source"], "none");
  EXPECT_EQ(to_json(none)["pairs"].size(), 0u);
}

TEST(Interconnect, ReportCarriesIt) {
  Report r;
  r.devices.resize(2);
  Interconnect ic;
  ic.source = "nvml";
  PairInterconnect p;
  p.b = 1;
  p.nvlinks = 18;
  ic.pairs.push_back(p);
  r.interconnect = ic;
  EXPECT_EQ(to_json(r)["interconnect"]["pairs"][0]["link"], "NV18");
  EXPECT_NE(render_table(r).find("Interconnect (nvml):  0-1 NV18"), std::string::npos) << render_table(r);
  r.interconnect.reset();
  EXPECT_FALSE(to_json(r).contains("interconnect"));  // before the agent looked (no GPU): absent
}
