// src/host/nvml.cpp through dlopen against a stand-in library (tests/fake_nvml, box
// h200-nvswitch): the struct layout, the entry points, the NVSwitch pair, a PCIe-only GPU with its
// P2P status; and no NVML at all.
#include "p2pnode/agent/nvml.hpp"

#include <gtest/gtest.h>

#include "fake_nvml/use_box.hpp"

using namespace p2pnode::agent;
using p2pnode::fake_nvml::UseBox;

TEST(Nvml, ReadsLinksAndP2pStatusThroughDlopen) {
  const UseBox box("h200-nvswitch");
  const auto ic = read_interconnect({"0000:00:06.0", "0000:00:07.0", "0000:00:08.0"}, P2PNODE_FAKE_NVML);
  ASSERT_EQ(ic.source, "nvml") << ic.reason;
  EXPECT_EQ(ic.nvml_driver_version, "580.159.04");
  ASSERT_EQ(ic.pairs.size(), 3u);
  const auto& nv = ic.pairs[0];
  EXPECT_EQ(nv.a, 0);
  EXPECT_EQ(nv.b, 1);
  EXPECT_EQ(nv.nvlinks, 18);
  EXPECT_EQ(nv.nvlink_via, "nvswitch");
  EXPECT_EQ(nv.nvlink_version, 7u);
  ASSERT_EQ(nv.p2p_status.size(), 4u);
  EXPECT_EQ(nv.p2p_status[0], (std::pair<std::string, std::string>{"read", "ok"}));
  const auto& pcie = ic.pairs[1];  // 0-2
  EXPECT_EQ(pcie.nvlinks, 0);
  EXPECT_EQ(pcie.p2p_status[0].second, "chipset_not_supported");
  EXPECT_EQ(pcie.p2p_status[2], (std::pair<std::string, std::string>{"nvlink", "not_supported"}));
  EXPECT_EQ(to_json(ic)["pairs"][0]["link"], "NV18");
}

TEST(Nvml, UnknownGpuOrNoLibraryIsAStatedReason) {
  const UseBox box("h200-nvswitch");
  auto ic = read_interconnect({"0000:00:06.0", "0000:3b:00.0"}, P2PNODE_FAKE_NVML);
  EXPECT_EQ(ic.source, "none");
  EXPECT_NE(ic.reason.find("NVML does not know GPU 1 (0000:3b:00.0)"), std::string::npos) << ic.reason;
  EXPECT_TRUE(ic.pairs.empty());
  ic = read_interconnect({"0000:00:06.0"}, "/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(ic.source, "none");
  EXPECT_EQ(ic.reason.rfind("NVML not available: ", 0), 0u) << ic.reason;
  EXPECT_NE(ic.reason.find("PCIe assumed for every pair"), std::string::npos);
}
