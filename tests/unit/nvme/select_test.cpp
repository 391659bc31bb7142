#include "nvme/select.hpp"

#include <gtest/gtest.h>

namespace p2pnode::nvme {
namespace {

std::vector<ControllerIdentity> box() {
  return {{"0000:01:00.0", "nvme", "S69ENF0R954321K", "Samsung SSD 980 PRO 2TB", false},
          {"0000:0b:00.0", "vfio-pci", "21165N801234", "WDC PC SN530 SDBPNPZ-1T00-1002", true},
          {"0000:0c:00.0", "nvme", "21165N809999", "WDC PC SN530 SDBPNPZ-1T00-1002", false}};
}

NvmeDrive by_serial(std::string s) {
  NvmeDrive d;
  d.serial = std::move(s);
  return d;
}

TEST(SelectNvme, SerialIsTrimmedAndRememberedSerialsCount) {
  const std::vector<NvmeDrive> drives{by_serial("  21165N801234 ")};
  const auto sel = select_nvme_drives(drives, box());
  ASSERT_EQ(sel.selected.size(), 1u);
  EXPECT_EQ(sel.selected[0].bdf, "0000:0b:00.0");
  EXPECT_EQ(sel.selected[0].matched_by, "serial 21165N801234");
  EXPECT_TRUE(sel.problems.empty());
}

TEST(SelectNvme, AmbiguousModelIsAProblemNotTwoDrives) {
  NvmeDrive d;
  d.model = "WDC PC SN530 SDBPNPZ-1T00-1002";
  const auto sel = select_nvme_drives({d}, box());
  EXPECT_TRUE(sel.selected.empty());
  ASSERT_EQ(sel.problems.size(), 1u);
  EXPECT_NE(sel.problems[0].find("matches 2 controllers (0000:0b:00.0, 0000:0c:00.0)"), std::string::npos);
}

TEST(SelectNvme, EveryGivenKeyMustMatch) {
  NvmeDrive d = by_serial("21165N801234");
  d.address = PciAddress::parse("0000:0c:00.0");
  const auto sel = select_nvme_drives({d}, box());
  EXPECT_TRUE(sel.selected.empty());
  ASSERT_EQ(sel.problems.size(), 1u);
  EXPECT_EQ(sel.problems[0], "no NVMe controller matches the drive with serial 21165N801234");
}

TEST(SelectNvme, AddressAndNamedTwice) {
  NvmeDrive a;
  a.address = PciAddress::parse("0000:0c:00.0");
  const auto sel = select_nvme_drives({a, by_serial("21165N809999")}, box());
  ASSERT_EQ(sel.selected.size(), 1u);
  ASSERT_EQ(sel.problems.size(), 1u);
  EXPECT_NE(sel.problems[0].find("named twice"), std::string::npos);
}

TEST(SelectNvme, UnnamedDrivesAreNeverSelected) {
  const auto sel = select_nvme_drives({by_serial("21165N809999")}, box());
  ASSERT_EQ(sel.selected.size(), 1u);
  EXPECT_EQ(sel.selected[0].bdf, "0000:0c:00.0");
}

}  // namespace
}  // namespace p2pnode::nvme
