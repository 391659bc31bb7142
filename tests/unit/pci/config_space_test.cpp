// Config space decoders on recorded bytes: the real H100 (virtualised, ReBAR masked), the generated
// RTX 4090 with its Resizable BAR capability, and EPYC root ports with ACS on and off.
#include "pci/config_space.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace {
using namespace p2pnode;
using namespace p2pnode::pci;

std::vector<std::uint8_t> config_of(const std::string& rel) {
  std::ifstream in(std::string(P2PNODE_SOURCE_DIR) + "/tests/fixtures/" + rel, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
const std::string kH100 = "h100-1gpu/sys/devices/pci0000:00/0000:00:06.0/config";
const std::string k4090 = "tinybox-6x4090/sys/bus/pci/devices/0000:01:00.0/config";
const std::string k4090Bios = "tinybox-6x4090-bios-default/sys/bus/pci/devices/0000:01:00.0/config";
const std::string kRootPortClean = "tinybox-6x4090/sys/bus/pci/devices/0000:00:01.1/config";
const std::string kRootPortAcs = "tinybox-6x4090-bios-default/sys/bus/pci/devices/0000:00:01.1/config";
}  // namespace

TEST(ConfigSpace, H100RecordedIsFullSizeWithMaskedExtendedCaps) {
  const auto cfg = config_of(kH100);
  ASSERT_EQ(cfg.size(), 4096u);
  EXPECT_EQ(read16(cfg, 0), 0x10de);
  EXPECT_EQ(read16(cfg, 2), 0x2330);
  // The hypervisor zeroes the IDs of some extended capabilities (ReBAR among them) but keeps
  // LTR and AER: ReBAR's absence proves nothing.
  EXPECT_TRUE(ext_caps_hidden(cfg));
  EXPECT_TRUE(decode_rebar(cfg).empty());
  EXPECT_FALSE(decode_acs(cfg).has_value());
  EXPECT_EQ(find_ext_capability(cfg, 0x0001), 0x1b8u);        // AER survives
  EXPECT_EQ(find_ext_capability(cfg, 0x0000), std::nullopt);  // ID 0 is never "found"
}

TEST(ConfigSpace, H100PowerManagementAndLink) {
  const auto cfg = config_of(kH100);
  EXPECT_EQ(find_capability(cfg, kCapPm), 0x40u);
  EXPECT_EQ(find_capability(cfg, kCapPcie), 0x60u);
  EXPECT_EQ(decode_pm_state(cfg), 0);  // D0
  const auto cmd = decode_command(cfg);
  ASSERT_TRUE(cmd);
  EXPECT_TRUE(*cmd & kCmdMemory);
  EXPECT_TRUE(*cmd & kCmdBusMaster);
  const LinkInfo l = decode_pcie_link(cfg);
  EXPECT_EQ(l.max_gts, 32.0);
  EXPECT_EQ(l.current_gts, 32.0);
  EXPECT_EQ(l.max_width, 16);
  EXPECT_EQ(l.current_width, 16);
}

TEST(ConfigSpace, Rtx4090ResizableBarAfterBiosFix) {
  const auto cfg = config_of(k4090);
  EXPECT_FALSE(ext_caps_hidden(cfg));
  EXPECT_EQ(find_ext_capability(cfg, kExtCapRebar), 0xbb0u);
  const auto rebar = decode_rebar(cfg);
  ASSERT_EQ(rebar.size(), 3u);
  EXPECT_EQ(rebar[0].bar, 0);
  EXPECT_EQ(rebar[0].current_size, 16 * MiB);
  EXPECT_EQ(rebar[0].largest_supported(), 16 * MiB);
  EXPECT_EQ(rebar[1].bar, 1);
  EXPECT_EQ(rebar[1].supported_mask, 0xffc0u);  // 64 MiB … 32 GiB
  EXPECT_EQ(rebar[1].current_size, 32 * GiB);
  EXPECT_EQ(rebar[1].largest_supported(), 32 * GiB);
  EXPECT_EQ(rebar[2].bar, 3);
  EXPECT_EQ(rebar[2].current_size, 32 * MiB);
  const LinkInfo l = decode_pcie_link(cfg);
  EXPECT_EQ(l.max_gts, 16.0);
  EXPECT_EQ(l.current_width, 16);
}

TEST(ConfigSpace, Rtx4090BeforeBiosFixOffersMoreThanItHas) {
  const auto rebar = decode_rebar(config_of(k4090Bios));
  ASSERT_EQ(rebar.size(), 3u);
  EXPECT_EQ(rebar[1].current_size, 256 * MiB);
  EXPECT_EQ(rebar[1].largest_supported(), 32 * GiB);
}

TEST(ConfigSpace, RootPortAcsOnAndOff) {
  const auto clean = decode_acs(config_of(kRootPortClean));
  ASSERT_TRUE(clean);
  EXPECT_EQ(clean->offset, 0x2a0);
  EXPECT_EQ(clean->capability, 0x1f);
  EXPECT_EQ(clean->control, 0);
  EXPECT_FALSE(clean->redirects());
  const auto on = decode_acs(config_of(kRootPortAcs));
  ASSERT_TRUE(on);
  EXPECT_EQ(on->control, 0x1d);  // source validation, request + completion redirect, upstream fwd
  EXPECT_TRUE(on->redirects());
  EXPECT_TRUE(decode_rebar(config_of(kRootPortAcs)).empty());
}

TEST(ConfigSpace, AcsRedirectBits) {
  EXPECT_FALSE((AcsInfo{0x1f, 0x01, 0}).redirects());  // source validation alone is harmless
  EXPECT_TRUE((AcsInfo{0x1f, 0x10, 0}).redirects());   // upstream forwarding: the fix clears it too
  EXPECT_TRUE((AcsInfo{0x1f, 0x04, 0}).redirects());   // P2P request redirect
  EXPECT_TRUE((AcsInfo{0x1f, 0x08, 0}).redirects());   // P2P completion redirect
  EXPECT_TRUE((AcsInfo{0x7f, 0x20, 0}).redirects());   // egress control
}

TEST(ConfigSpace, TruncatedAndEmptyBuffersAreSafe) {
  const auto full = config_of(k4090);
  for (std::size_t n : {0u, 1u, 6u, 0x35u, 0x40u, 0x79u, 0x100u, 0x102u, 0xbb4u, 0xbc0u}) {
    SCOPED_TRACE(n);
    const std::vector<std::uint8_t> cut(full.begin(), full.begin() + static_cast<long>(n));
    (void)decode_pcie_link(cut);
    (void)decode_pm_state(cut);
    (void)decode_acs(cut);
    const auto r = decode_rebar(cut);
    EXPECT_LE(r.size(), 3u);
  }
  EXPECT_EQ(read16(std::vector<std::uint8_t>{0x01}, 0), std::nullopt);
  EXPECT_EQ(read32(std::vector<std::uint8_t>{1, 2, 3}, 0), std::nullopt);
  EXPECT_EQ(read32(std::vector<std::uint8_t>{1, 2, 3, 4}, 0), 0x04030201u);
  // 256 bytes (no extended area: run without root, or a conventional PCI function).
  const std::vector<std::uint8_t> short_cfg(full.begin(), full.begin() + 256);
  EXPECT_TRUE(ext_caps_hidden(short_cfg));
  EXPECT_EQ(decode_pcie_link(short_cfg).max_width, 16);
}

TEST(ConfigSpace, LoopingCapabilityListsTerminate) {
  std::vector<std::uint8_t> cfg(4096, 0);
  cfg[0x06] = 0x10;  // capability list present
  cfg[0x34] = 0x40;
  cfg[0x40] = 0x09;  // vendor specific, points at itself
  cfg[0x41] = 0x40;
  EXPECT_EQ(find_capability(cfg, kCapPcie), std::nullopt);
  // Extended: 0x100 -> 0x100 with a non-zero ID.
  cfg[0x100] = 0x0b;
  cfg[0x102] = 0x01;
  cfg[0x103] = 0x10;  // next = 0x100
  EXPECT_EQ(find_ext_capability(cfg, kExtCapAcs), std::nullopt);
  EXPECT_FALSE(ext_caps_hidden(cfg));
  // No capability list bit: nothing is walked even with a pointer present.
  cfg[0x06] = 0;
  cfg[0x40] = kCapPcie;
  EXPECT_EQ(find_capability(cfg, kCapPcie), std::nullopt);
}

TEST(ConfigSpace, ZeroedExtendedAreaIsHidden) {
  std::vector<std::uint8_t> cfg(4096, 0);
  EXPECT_TRUE(ext_caps_hidden(cfg));
  std::fill(cfg.begin() + 0x100, cfg.end(), 0xFF);
  EXPECT_TRUE(ext_caps_hidden(cfg));
}

TEST(ConfigSpace, LinkSpeedEncodings) {
  EXPECT_EQ(link_speed_gts(1), 2.5);
  EXPECT_EQ(link_speed_gts(2), 5.0);
  EXPECT_EQ(link_speed_gts(3), 8.0);
  EXPECT_EQ(link_speed_gts(4), 16.0);
  EXPECT_EQ(link_speed_gts(5), 32.0);
  EXPECT_EQ(link_speed_gts(6), 64.0);
  EXPECT_EQ(link_speed_gts(0), std::nullopt);
  EXPECT_EQ(link_speed_gts(7), std::nullopt);
  EXPECT_EQ(link_speed_gts(-1), std::nullopt);
}
