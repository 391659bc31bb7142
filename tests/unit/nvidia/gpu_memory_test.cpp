// The VRAM a GPU reports about itself: nvidia-smi's CSV and bus-id forms.
#include "nvidia/gpu_memory.hpp"

#include <gtest/gtest.h>

using namespace p2pnode;
using namespace p2pnode::nvidia;

TEST(GpuMemory, ParsesNvidiaSmiCsv) {
  // As a 4090 box with one modded 48 GB card prints it (nounits: MiB).
  const auto m = parse_smi_memory("00000000:01:00.0, 24564\n00000000:41:00.0, 49140\r\n\n");
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ(m->at("0000:01:00.0"), 24564 * MiB);
  EXPECT_EQ(m->at("0000:41:00.0"), 49140 * MiB);
  EXPECT_TRUE(parse_smi_memory("")->empty());
}

TEST(GpuMemory, GarbageNamesTheLine) {
  auto m = parse_smi_memory("00000000:01:00.0, 24564\nNo devices were found\n");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "nvidia-smi line 2 'No devices were found': expected 'bus id, MiB'");
  m = parse_smi_memory("00000000:01:00.0, [N/A]\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("memory.total is not a number of MiB"), std::string::npos);
  EXPECT_FALSE(parse_smi_memory("GPU-1234, 100\n"));
}

TEST(GpuMemory, BusIdsInSysfsForm) {
  EXPECT_EQ(sysfs_bus_id("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(sysfs_bus_id("0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(sysfs_bus_id("00010000:01:00.1"), "");  // a domain beyond 16 bits is not one sysfs shows
  EXPECT_EQ(sysfs_bus_id("3b:00.0"), "");
  EXPECT_EQ(sysfs_bus_id(""), "");
}
