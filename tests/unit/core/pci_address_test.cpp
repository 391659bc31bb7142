// A PCI address parsed once, at the door, into the lower-case form sysfs lists: a profile that names
// its drive "0000:0B:00.0" matches the drive sysfs calls 0000:0b:00.0 (it never did before).
#include "core/pci_address.hpp"

#include <gtest/gtest.h>

#include "nvme/select.hpp"
#include "profile/loader.hpp"

using namespace p2pnode;

TEST(PciAddress, OneRuleAndTheSysfsForm) {
  EXPECT_TRUE(is_pci_address("0000:0b:00.0"));
  EXPECT_TRUE(is_pci_address("0000:c1:1f.7"));
  EXPECT_TRUE(is_pci_address("0000:0B:00.0"));
  EXPECT_FALSE(is_pci_address("0b:00.0"));
  EXPECT_FALSE(is_pci_address("0000:0b:00.8"));
  EXPECT_FALSE(is_pci_address("0000:0g:00.0"));
  EXPECT_FALSE(is_pci_address("0000-0b-00.0"));
  EXPECT_FALSE(is_pci_address(""));
  EXPECT_EQ(PciAddress::parse("0000:0B:00.0")->str(), "0000:0b:00.0");
  EXPECT_EQ(*PciAddress::parse("0000:C1:1F.7"), "0000:c1:1f.7");
  EXPECT_FALSE(PciAddress::parse("0000:0b:00"));
}

TEST(PciAddress, AnUpperCaseProfileAddressSelectsItsDrive) {
  const auto r = profile::load_profile_text(
      "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata: {name: upper}\n"
      "nvme:\n  drives:\n    - address: 0000:0B:00.0\n      pair_gpu: 0000:0A:00.0\n",
      "upper.yaml");
  ASSERT_TRUE(r.profile) << r.diagnostics.format();
  const auto& d = r.profile->nvme->drives.at(0);
  EXPECT_EQ(d.address->str(), "0000:0b:00.0");
  EXPECT_EQ(d.pair_gpu->str(), "0000:0a:00.0");
  EXPECT_EQ(drive_key(d), "address 0000:0b:00.0");
  const std::vector<nvme::ControllerIdentity> box{{"0000:0b:00.0", "nvme", "S1", "M", false}};
  const auto sel = nvme::select_nvme_drives(r.profile->nvme->drives, box);
  ASSERT_EQ(sel.selected.size(), 1u) << (sel.problems.empty() ? "" : sel.problems.front());
  EXPECT_EQ(sel.selected[0].bdf, "0000:0b:00.0");
}
