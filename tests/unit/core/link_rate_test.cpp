// Link rates per PCIe generation and NVLink generation, and the efficiency table's shape.
#include "core/link_rate.hpp"

#include <gtest/gtest.h>

using namespace p2pnode;

TEST(LinkRate, PcieGenerationsAfterEncoding) {
  EXPECT_EQ(pcie_generation(2.5), 1);
  EXPECT_EQ(pcie_generation(64.0), 6);
  EXPECT_EQ(pcie_generation(12.0), 0);
  EXPECT_NEAR(pcie_gbps(2.5, 16), 4.0, 1e-9);     // 8b/10b
  EXPECT_NEAR(pcie_gbps(5.0, 8), 4.0, 1e-9);      // 8b/10b
  EXPECT_NEAR(pcie_gbps(8.0, 16), 15.754, 1e-3);  // 128b/130b
  EXPECT_NEAR(pcie_gbps(16.0, 16), 31.508, 1e-3);
  EXPECT_NEAR(pcie_gbps(16.0, 8), 15.754, 1e-3);
  EXPECT_NEAR(pcie_gbps(32.0, 16), 63.015, 1e-3);  // the agent's sysfs figure on the H200 node
  EXPECT_NEAR(pcie_gbps(64.0, 16), 121.0, 1e-9);   // FLIT: 242 of 256 bytes
  EXPECT_EQ(pcie_gbps(12.0, 16), 0);
  EXPECT_EQ(pcie_gbps(16.0, 0), 0);
}

TEST(LinkRate, NvlinkGenerationsFromNvml) {
  EXPECT_EQ(nvlink_generation(6, 9), 4);  // NVML_NVLINK_VERSION_4_0 on Hopper
  EXPECT_EQ(nvlink_generation(7, 9), 4);  // the 5.0 that some drivers report for Hopper
  EXPECT_EQ(nvlink_generation(7, 10), 5);
  EXPECT_EQ(nvlink_generation(4, 8), 3);  // A100 reports 3.0
  EXPECT_EQ(nvlink_generation(1, 6), 1);
  EXPECT_EQ(nvlink_generation(0, 9), 0);
  EXPECT_EQ(nvlink_generation(42, 8), 0);
  EXPECT_EQ(18 * nvlink_link_gbps(4), 450);  // H100/H200: 900 GB/s both ways
  EXPECT_EQ(18 * nvlink_link_gbps(5), 900);  // B200: 1.8 TB/s both ways
  EXPECT_EQ(12 * nvlink_link_gbps(3), 300);  // A100: 600 GB/s both ways
  EXPECT_EQ(nvlink_link_gbps(0), 0);
}

TEST(LinkRate, EveryPathAndCopyHasACitedFactor) {
  for (auto p : {PathKind::nvlink, PathKind::pcie_p2p, PathKind::pcie_p2p_cross_socket}) {
    for (auto c : {CopyKind::ce, CopyKind::sm, CopyKind::bidirectional}) {
      const auto& e = efficiency(p, c);
      EXPECT_EQ(e.path, p);
      EXPECT_EQ(e.copy, c) << to_string(p) << " " << to_string(c);
      EXPECT_GT(e.factor, 0.5);
      EXPECT_LT(e.factor, 1.0);
      EXPECT_FALSE(e.source.empty());
    }
  }
  EXPECT_EQ(efficiency(PathKind::pcie_host, CopyKind::sm).copy, CopyKind::ce);  // host: the CE figure
}

TEST(LinkRate, FactorsReproduceTheMeasurementsTheyCite) {
  // H200 NV18: 396.3 (write) and 393.8 (read) GB/s on 450; host 55.0 on 63.02.
  EXPECT_NEAR(450 * efficiency(PathKind::nvlink, CopyKind::ce).factor, 393.8, 0.5);
  EXPECT_NEAR(pcie_gbps(32, 16) * efficiency(PathKind::pcie_host, CopyKind::ce).factor, 55.0, 0.5);
  // Seed 001, RTX 4090 Gen4 x16: medians 25.79 within a socket, 22.19 across.
  EXPECT_NEAR(pcie_gbps(16, 16) * efficiency(PathKind::pcie_p2p, CopyKind::ce).factor, 25.79, 0.3);
  EXPECT_NEAR(pcie_gbps(16, 16) * efficiency(PathKind::pcie_p2p_cross_socket, CopyKind::ce).factor, 22.19, 0.3);
}
