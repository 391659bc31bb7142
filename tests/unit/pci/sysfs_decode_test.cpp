// sysfs attribute decoders on recorded text: resource tables of 7, 13 and 17 lines, link speeds,
// hex attributes, resize bitmaps.
#include "pci/sysfs_decode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/units.hpp"

namespace {
using namespace p2pnode;
using namespace p2pnode::pci;

std::string fixture(const std::string& rel) {
  std::ifstream in(std::string(P2PNODE_SOURCE_DIR) + "/tests/fixtures/" + rel, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST(ResourceTable, H100SevenLinesRecorded) {
  const auto bars = decode_resource_table(fixture("h100-1gpu/sys/devices/pci0000:00/0000:00:06.0/resource"));
  ASSERT_TRUE(bars.ok()) << bars.error().message;
  ASSERT_EQ(bars->size(), 3u);
  EXPECT_EQ((*bars)[0].index, 0);
  EXPECT_EQ((*bars)[0].size(), 16 * MiB);
  EXPECT_EQ((*bars)[1].index, 2);
  EXPECT_EQ((*bars)[1].size(), 128 * GiB);
  EXPECT_TRUE((*bars)[1].is_mem());
  EXPECT_TRUE((*bars)[1].is_64bit());
  EXPECT_TRUE((*bars)[1].is_prefetch());
  EXPECT_EQ((*bars)[2].index, 4);
  EXPECT_EQ((*bars)[2].size(), 32 * MiB);
}

TEST(ResourceTable, Rtx4090ThirteenLines) {
  const std::string text = fixture("tinybox-6x4090/sys/bus/pci/devices/0000:01:00.0/resource");
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 13);
  const auto bars = decode_resource_table(text);
  ASSERT_TRUE(bars.ok());
  ASSERT_GE(bars->size(), 4u);
  const Bar& bar0 = (*bars)[0];
  EXPECT_EQ(bar0.index, 0);
  EXPECT_EQ(bar0.size(), 16 * MiB);
  EXPECT_TRUE(bar0.is_mem());
  EXPECT_FALSE(bar0.is_64bit());  // the 32-bit 16 MiB BAR0
  EXPECT_FALSE(bar0.is_prefetch());
  EXPECT_EQ((*bars)[1].index, 1);
  EXPECT_EQ((*bars)[1].size(), 32 * GiB);
  EXPECT_TRUE((*bars)[1].is_64bit() && (*bars)[1].is_prefetch());
  EXPECT_EQ((*bars)[2].index, 3);
  EXPECT_EQ((*bars)[2].size(), 32 * MiB);
  EXPECT_EQ((*bars)[3].index, 5);
  EXPECT_TRUE((*bars)[3].is_io());
  EXPECT_EQ((*bars)[3].size(), 128u);
}

TEST(ResourceTable, BridgeSeventeenLinesWithWindows) {
  const std::string text = fixture("tinybox-6x4090/sys/bus/pci/devices/0000:00:01.1/resource");
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 17);
  const auto bars = decode_resource_table(text);
  ASSERT_TRUE(bars.ok()) << bars.error().message;
  for (const Bar& b : *bars) { EXPECT_GE(b.index, 13) << "a root port has no BARs, only windows"; }
  EXPECT_FALSE(bars->empty());
}

TEST(ResourceTable, VramApertureIsLargest64BitPrefetchableNotAFixedIndex) {
  PciDevice d;
  auto bars = decode_resource_table(fixture("h100-1gpu/sys/devices/pci0000:00/0000:00:06.0/resource"));
  ASSERT_TRUE(bars.ok());
  d.bars = *bars;
  ASSERT_NE(d.vram_aperture(), nullptr);
  EXPECT_EQ(d.vram_aperture()->index, 2);
  auto t = decode_resource_table(fixture("tinybox-6x4090/sys/bus/pci/devices/0000:01:00.0/resource"));
  ASSERT_TRUE(t.ok());
  d.bars = *t;
  EXPECT_EQ(d.vram_aperture()->index, 1);
}

TEST(ResourceTable, GarbageIsAnErrorThatSaysWhichLine) {
  auto r = decode_resource_table("0x0 0x0 0x0\nhello world\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "line 2 of resource is 'hello world', expected three hex numbers (start end flags)");
  EXPECT_FALSE(decode_resource_table("").ok());
  EXPECT_EQ(decode_resource_table("").error().message, "resource is empty");
  EXPECT_FALSE(decode_resource_table("0x1000 0x0fff 0x200\n").ok());              // ends before it starts
  EXPECT_FALSE(decode_resource_table("0x0 0x0 0x0 0x0\n").ok());                  // four columns
  EXPECT_FALSE(decode_resource_table("0x0000102002000000 0x0000102002ff").ok());  // truncated line
  // A truncated file whose last line is whole still decodes what is there.
  auto partial = decode_resource_table("0x0000102002000000 0x0000102002ffffff 0x000000000014220c");
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->size(), 1u);
}

TEST(SysfsText, LinkSpeedStrings) {
  EXPECT_EQ(parse_link_speed("16.0 GT/s PCIe"), 16.0);
  EXPECT_EQ(parse_link_speed("32.0 GT/s PCIe"), 32.0);
  EXPECT_EQ(parse_link_speed("2.5 GT/s PCIe"), 2.5);
  EXPECT_EQ(parse_link_speed("8 GT/s"), 8.0);  // older kernels
  EXPECT_EQ(parse_link_speed("5.0 GT/s"), 5.0);
  EXPECT_EQ(parse_link_speed("Unknown"), std::nullopt);
  EXPECT_EQ(parse_link_speed("Unknown speed"), std::nullopt);
  EXPECT_EQ(parse_link_speed(""), std::nullopt);
  EXPECT_EQ(parse_link_speed("16.0"), std::nullopt);
  EXPECT_EQ(parse_link_speed("0 GT/s"), std::nullopt);
  EXPECT_EQ(parse_link_speed("-8 GT/s"), std::nullopt);
  EXPECT_EQ(parse_link_speed(fixture("gpu-link-x8/sys/bus/pci/devices/0000:41:00.0/current_link_speed")), 2.5);
}

TEST(SysfsText, HexAndInt) {
  EXPECT_EQ(parse_hex("0x10de"), 0x10deu);
  EXPECT_EQ(parse_hex("0x10de\n"), 0x10deu);
  EXPECT_EQ(parse_hex("2684"), 0x2684u);
  EXPECT_EQ(parse_hex("0x030200"), 0x030200u);
  EXPECT_EQ(parse_hex(""), std::nullopt);
  EXPECT_EQ(parse_hex("0x"), std::nullopt);
  EXPECT_EQ(parse_hex("nvidia"), std::nullopt);
  EXPECT_EQ(parse_hex("0x10de garbage"), std::nullopt);
  EXPECT_EQ(parse_hex("0x1ffffffffffffffff"), std::nullopt);  // overflow
  EXPECT_EQ(parse_int("-1"), -1);                             // numa_node without NUMA
  EXPECT_EQ(parse_int("16\n"), 16);
  EXPECT_EQ(parse_int(""), std::nullopt);
  EXPECT_EQ(parse_int("x16"), std::nullopt);
  EXPECT_EQ(parse_int("99999999999"), std::nullopt);
}

TEST(SysfsText, ResizeBitmap) {
  // Recorded 4090 BAR1: bits 6..15, 64 MiB … 32 GiB.
  const auto m = decode_resize_bitmap(fixture("tinybox-6x4090/sys/bus/pci/devices/0000:01:00.0/resource1_resize"));
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, 0xffc0u);
  EXPECT_EQ(decode_resize_bitmap("garbage"), std::nullopt);
}

TEST(SysfsText, ClassifyAndBdf) {
  EXPECT_EQ(classify(0x10de, 0x030000), DeviceKind::gpu);
  EXPECT_EQ(classify(0x10de, 0x030200), DeviceKind::gpu);           // H100: 3D controller
  EXPECT_EQ(classify(0x1002, 0x030000), DeviceKind::other);         // AMD GPU is not ours
  EXPECT_EQ(classify(0x10de, 0x040300), DeviceKind::gpu_function);  // HDMI audio
  EXPECT_EQ(classify(0x15b7, 0x010802), DeviceKind::nvme);
  EXPECT_EQ(classify(0x1022, 0x060400), DeviceKind::bridge);
  EXPECT_EQ(classify(0x1022, 0x060000), DeviceKind::host_bridge);
}
