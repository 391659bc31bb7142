// IOMMU mode decisions: units decide whether a translating IOMMU exists, group types decide
// passthrough versus translating, the command line is the fallback; noiommu never turns it on.
#include "pci/iommu.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace p2pnode;
using namespace p2pnode::pci;

namespace {
IommuState state(std::vector<std::string> units, std::map<std::string, int> groups, std::string_view cmdline = "",
                 bool noiommu = false) {
  IommuState s;
  s.units = std::move(units);
  s.group_types = std::move(groups);
  s.cmdline_args = iommu_cmdline_args(cmdline);
  s.noiommu_groups = noiommu;
  decide_iommu_mode(s);
  return s;
}
}  // namespace

TEST(IommuCmdline, PicksOnlyIommuArguments) {
  EXPECT_EQ(iommu_cmdline_args("BOOT_IMAGE=/vmlinuz root=UUID=x ro quiet amd_iommu=off iommu=pt"),
            (std::vector<std::string>{"amd_iommu=off", "iommu=pt"}));
  EXPECT_EQ(iommu_cmdline_args("intel_iommu=on,sm_on iommu.passthrough=1 iommu.strict=0 noiommu=1"),
            (std::vector<std::string>{"intel_iommu=on,sm_on", "iommu.passthrough=1", "iommu.strict=0"}));
  EXPECT_TRUE(iommu_cmdline_args("").empty());
  // Arguments after "--" go to init, not the kernel.
  EXPECT_TRUE(iommu_cmdline_args("quiet -- iommu=pt").empty());
  EXPECT_TRUE(iommu_cmdline_args("xiommu=pt myiommu=off").empty());
}

TEST(IommuMode, OffWithNoiommuGroupsStaysOff) {
  const auto s = state({}, {}, "amd_iommu=off", /*noiommu=*/true);
  EXPECT_EQ(s.mode, IommuMode::off);
  ASSERT_FALSE(s.evidence.empty());
  EXPECT_EQ(s.evidence.front(), "/sys/class/iommu has no IOMMU units");
  EXPECT_NE(
      std::find(s.evidence.begin(), s.evidence.end(), "vfio noiommu groups exist; they do not mean an IOMMU is on"),
      s.evidence.end());
}

TEST(IommuMode, OffWhileFirmwareDescribesOne) {
  IommuState s;
  s.acpi_tables = {"IVRS"};
  s.cmdline_args = iommu_cmdline_args("amd_iommu=off");
  decide_iommu_mode(s);
  EXPECT_EQ(s.mode, IommuMode::off);
  EXPECT_EQ(s.evidence.back(), "the firmware describes one (ACPI IVRS) but the kernel did not enable it");
}

TEST(IommuMode, OffEvenWhenCmdlineAsksForPassthrough) {
  // No units: nothing translates, whatever the command line wished for.
  EXPECT_EQ(state({}, {}, "iommu=pt").mode, IommuMode::off);
}

TEST(IommuMode, IdentityGroupsArePassthrough) {
  const auto s = state({"ivhd0", "ivhd1"}, {{"identity", 12}}, "iommu=pt");
  EXPECT_EQ(s.mode, IommuMode::passthrough);
  EXPECT_EQ(s.evidence.front(), "IOMMU units in /sys/class/iommu: ivhd0, ivhd1");
  EXPECT_EQ(s.evidence.back(), "12 IOMMU groups in identity (passthrough) domains, 0 in translating (DMA) domains");
}

TEST(IommuMode, DmaFqGroupsAreTranslating) {
  EXPECT_EQ(state({"ivhd0"}, {{"DMA-FQ", 5}}).mode, IommuMode::translating);
  EXPECT_EQ(state({"dmar0"}, {{"DMA", 3}}).mode, IommuMode::translating);
  // Group types win over the command line: one translating group means translating.
  EXPECT_EQ(state({"dmar0"}, {{"identity", 10}, {"DMA", 1}}, "iommu=pt").mode, IommuMode::translating);
  // Blocked/unmanaged groups (vfio-bound) say nothing either way.
  EXPECT_EQ(state({"dmar0"}, {{"identity", 2}, {"unmanaged", 1}}).mode, IommuMode::passthrough);
}

TEST(IommuMode, CmdlineFallbackWithoutGroupTypes) {
  EXPECT_EQ(state({"dmar0"}, {}, "intel_iommu=on iommu=pt").mode, IommuMode::passthrough);
  EXPECT_EQ(state({"dmar0"}, {}, "iommu.passthrough=1").mode, IommuMode::passthrough);
  EXPECT_EQ(state({"dmar0"}, {}, "iommu.passthrough=on").mode, IommuMode::passthrough);
  EXPECT_EQ(state({"dmar0"}, {}, "intel_iommu=on").mode, IommuMode::translating);
  EXPECT_EQ(state({"dmar0"}, {}, "iommu.passthrough=0").mode, IommuMode::translating);
  EXPECT_EQ(state({"dmar0"}, {}, "").mode, IommuMode::translating);
  EXPECT_EQ(state({"dmar0"}, {}, "").evidence.back(), "no passthrough argument on the kernel command line");
}

TEST(IommuMode, DecidingTwiceGivesTheSameEvidence) {
  IommuState s;
  s.units = {"dmar0"};
  s.group_types = {{"identity", 1}};
  decide_iommu_mode(s);
  const auto first = s.evidence;
  decide_iommu_mode(s);
  EXPECT_EQ(s.evidence, first);
}

TEST(IommuMode, Names) {
  EXPECT_STREQ(to_string(IommuMode::off), "off");
  EXPECT_STREQ(to_string(IommuMode::passthrough), "passthrough");
  EXPECT_STREQ(to_string(IommuMode::translating), "translating");
}
