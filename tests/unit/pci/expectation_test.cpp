// Ceilings and expectations on every fixture: 4090 Gen4 x16 pairs under one root complex and
// across, a Gen1 link, H100 and H200 (PCIe, then NVLink as the agent reports it).
#include "pci/expectation.hpp"

#include <gtest/gtest.h>

#include "probe/probe.hpp"
#include "sys/sysroot.hpp"
#include "unit/fixture_inventory.hpp"
#include "unit/source_files.hpp"

using namespace p2pnode;
using namespace p2pnode::pci;

namespace {
using p2pnode::test_files::probe_fixture;
Ceiling pair(const Inventory& inv, const char* a, const char* b) {
  const PciDevice *da = inv.find(a), *db = inv.find(b);
  EXPECT_TRUE(da && db) << a << " " << b;
  if (!da || !db) { return {}; }
  auto c = pair_ceiling(*da, *db, inv);
  EXPECT_TRUE(c.has_value());
  return c.value_or(Ceiling{});
}
constexpr double kGen4x16 = 16.0 * 16 * 128 / 130 / 8;  // 31.51 GB/s
constexpr double kGen5x16 = 32.0 * 16 * 128 / 130 / 8;  // 63.02 GB/s
}  // namespace

TEST(Expectation, Rtx4090PairsUnderOneRootComplexAndAcross) {
  const auto inv = probe_fixture("tinybox-6x4090");
  const auto same_rc = pair(inv, "0000:81:00.0", "0000:82:00.0");
  EXPECT_EQ(same_rc.link, "PHB");
  EXPECT_EQ(same_rc.path, PathKind::pcie_p2p);
  EXPECT_NEAR(same_rc.gbps, kGen4x16, 1e-6);
  EXPECT_NEAR(expect(same_rc, CopyKind::ce).expected_gbps, kGen4x16 * 0.82, 1e-6);
  EXPECT_NEAR(expect(same_rc, CopyKind::bidirectional).expected_gbps, 2 * kGen4x16 * 0.80, 1e-6);
  const auto across = pair(inv, "0000:01:00.0", "0000:42:00.0");
  EXPECT_EQ(across.link, "NODE");
  EXPECT_EQ(across.path, PathKind::pcie_p2p);
  EXPECT_NEAR(across.gbps, kGen4x16, 1e-6);

  const auto numa = probe_fixture("epyc-8x4090-numa");
  const auto sys = pair(numa, "0000:01:00.0", "0000:81:00.0");
  EXPECT_EQ(sys.link, "SYS");
  EXPECT_EQ(sys.path, PathKind::pcie_p2p_cross_socket);
  EXPECT_NEAR(expect(sys, CopyKind::ce).expected_gbps, kGen4x16 * 0.70, 1e-6);
  // Seed 001's lowest healthy cross-socket cell (20.57 GB/s) is 93 % of that.
  EXPECT_NEAR(20.57 / expect(sys, CopyKind::ce).expected_gbps, 0.933, 0.005);
}

TEST(Expectation, TheNarrowestLinkOnThePathSetsTheCeiling) {
  const auto inv = probe_fixture("gpu-link-x8");  // 01: Gen4 x8; 41: Gen1 x16
  const auto c = pair(inv, "0000:01:00.0", "0000:41:00.0");
  EXPECT_NEAR(c.gbps, 4.0, 1e-9);  // 2.5 GT/s x16 after 8b/10b
  EXPECT_NE(c.narrowest.find("0000:41:00.0: x16 at 2.5 GT/s (Gen1)"), std::string::npos) << c.narrowest;
  const auto h8 = host_ceiling(*inv.find("0000:01:00.0"), inv);
  ASSERT_TRUE(h8);
  EXPECT_NEAR(h8->gbps, kGen4x16 / 2, 1e-6);
  EXPECT_NE(h8->narrowest.find("x8 at 16 GT/s (Gen4)"), std::string::npos) << h8->narrowest;
  const auto h1 = host_ceiling(*inv.find("0000:41:00.0"), inv);
  ASSERT_TRUE(h1);
  EXPECT_NEAR(expect(*h1, CopyKind::ce).expected_gbps, 4.0 * 0.87, 1e-9);
}

TEST(Expectation, SwitchPairsUseOnlyTheLinksBelowTheSwitch) {
  auto inv = probe_fixture("epyc-8x4090-4nvme");  // 83 and 84 under one switch
  const auto c = pair(inv, "0000:83:00.0", "0000:84:00.0");
  EXPECT_EQ(c.link, "PIX");
  EXPECT_NEAR(c.gbps, kGen4x16, 1e-6);
  // A slow uplink above the switch does not limit the pair, but does limit host copies.
  const PciDevice* g = inv.find("0000:83:00.0");
  ASSERT_TRUE(g && g->upstream.size() >= 2);
  for (auto& d : inv.devices) {
    if (d.bdf == g->upstream[1]) {
      d.link.current_width = 4;  // the switch's upstream port: x4
    }
  }
  EXPECT_NEAR(pair(inv, "0000:83:00.0", "0000:84:00.0").gbps, kGen4x16, 1e-6);
  EXPECT_NEAR(host_ceiling(*inv.find("0000:83:00.0"), inv)->gbps, kGen4x16 / 4, 1e-6);
}

TEST(Expectation, H100HostCopies) {
  const auto inv = probe_fixture("h100-1gpu");
  const auto h = host_ceiling(*inv.find("0000:00:06.0"), inv);
  ASSERT_TRUE(h);
  EXPECT_NEAR(h->gbps, kGen5x16, 1e-6);
  EXPECT_NEAR(expect(*h, CopyKind::ce).expected_gbps, 54.82, 0.01);
}

TEST(Expectation, H200IsPhbToSysfsAndNv18ToTheDriver) {
  auto inv = probe_fixture("h200-4gpu");
  const auto pcie = pair(inv, "0000:00:06.0", "0000:00:07.0");
  EXPECT_EQ(pcie.link, "PHB");
  EXPECT_NEAR(pcie.gbps, kGen5x16, 1e-6);
  inv.interconnects.push_back({"0000:00:06.0", "0000:00:07.0", 18, 4});
  const auto nv = pair(inv, "0000:00:07.0", "0000:00:06.0");
  EXPECT_EQ(nv.link, "NV18");
  EXPECT_EQ(nv.path, PathKind::nvlink);
  EXPECT_EQ(nv.gbps, 450);
  EXPECT_EQ(pair_link(*inv.find("0000:00:06.0"), *inv.find("0000:00:07.0"), inv), "NV18");
  EXPECT_EQ(pair_link(*inv.find("0000:00:06.0"), *inv.find("0000:00:08.0"), inv), "PHB");
  const auto ce = expect(nv, CopyKind::ce);
  EXPECT_NEAR(ce.expected_gbps, 393.75, 1e-9);
  EXPECT_NEAR(396.4 / ce.expected_gbps, 1.007, 0.001);  // the measured CE write over it
  EXPECT_NEAR(expect(nv, CopyKind::bidirectional).expected_gbps, 778.5, 0.1);
  EXPECT_NEAR(expect(nv, CopyKind::sm).expected_gbps, 369.0, 1e-9);
  // NVLinks of an unknown generation: no ceiling (PCIe's would be far too low).
  inv.interconnects.back().nvlink_generation = 0;
  EXPECT_FALSE(pair_ceiling(*inv.find("0000:00:06.0"), *inv.find("0000:00:07.0"), inv));
}
