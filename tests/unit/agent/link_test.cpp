#include "p2pnode/agent/link.hpp"
#include "unit/temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace p2pnode::agent;

TEST(AgentLink, DecodeSpeed) {
  EXPECT_DOUBLE_EQ(*decode_link_speed("32.0 GT/s PCIe\n"), 32.0);
  EXPECT_DOUBLE_EQ(*decode_link_speed("2.5 GT/s"), 2.5);
  EXPECT_DOUBLE_EQ(*decode_link_speed("16 GT/s PCIe"), 16.0);
  EXPECT_FALSE(decode_link_speed("Unknown").has_value());
  EXPECT_FALSE(decode_link_speed("").has_value());
  EXPECT_FALSE(decode_link_speed("8.0 MB/s").has_value());
  EXPECT_FALSE(decode_link_speed("1.2.3 GT/s").has_value());
}

TEST(AgentLink, DecodeWidth) {
  EXPECT_EQ(*decode_link_width("16\n"), 16);
  EXPECT_EQ(*decode_link_width("x8"), 8);
  EXPECT_FALSE(decode_link_width("0").has_value());
  EXPECT_FALSE(decode_link_width("sixteen").has_value());
  EXPECT_FALSE(decode_link_width("").has_value());
}

TEST(AgentLink, TheoreticalFigures) {
  EXPECT_NEAR(link_theoretical_gbps(32.0, 16), 63.015, 0.001);  // Gen5 x16
  EXPECT_NEAR(link_theoretical_gbps(16.0, 16), 31.508, 0.001);  // Gen4 x16
  EXPECT_NEAR(link_theoretical_gbps(5.0, 16), 8.0, 1e-9);       // Gen2: 8b/10b
}

TEST(AgentLink, ReadsRecordedSysfsTree) {
  namespace fs = std::filesystem;
  const p2pnode::test::TempDir scratch("agent-link");
  const fs::path root = scratch.path();
  const fs::path dev = root / "bus/pci/devices/0000:3b:00.0";
  fs::create_directories(dev);
  std::ofstream(dev / "current_link_speed") << "16.0 GT/s PCIe\n";
  std::ofstream(dev / "current_link_width") << "8\n";
  std::ofstream(dev / "max_link_speed") << "32.0 GT/s PCIe\n";
  std::ofstream(dev / "max_link_width") << "16\n";
  const auto li = read_link_info(root.string(), "0000:3b:00.0");
  ASSERT_TRUE(li.has_value());
  EXPECT_DOUBLE_EQ(li->current_speed_gts, 16.0);
  EXPECT_EQ(li->current_width, 8);
  EXPECT_DOUBLE_EQ(li->max_speed_gts, 32.0);
  EXPECT_EQ(li->max_width, 16);
  EXPECT_NEAR(li->theoretical_gbps, 15.754, 0.001);
  EXPECT_FALSE(read_link_info(root.string(), "0000:00:00.0").has_value());
}
