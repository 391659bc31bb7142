// The nvme.binding check (daemon/checks/nvme.cpp) on hand-built inventories: the seed's D3hot trap.
#include <gtest/gtest.h>

#include "checks/check.hpp"

namespace p2pnode::checks {
namespace {

PciDevice nvme_dev(const std::string& bdf, const std::string& driver, const std::string& state,
                   const std::string& control, std::uint16_t command, int d_state) {
  PciDevice d;
  d.bdf = bdf;
  d.kind = DeviceKind::nvme;
  d.driver = driver;
  d.power_state = state;
  d.power_control = control;
  d.config.assign(256, 0);
  d.config[0x04] = static_cast<std::uint8_t>(command & 0xFF);
  d.config[0x05] = static_cast<std::uint8_t>(command >> 8);
  d.config[0x06] = 0x10;  // capability list
  d.config[0x34] = 0x60;
  d.config[0x60] = 0x01;  // PM, last in the list
  d.config[0x64] = static_cast<std::uint8_t>(d_state);
  return d;
}

Profile wants(int drives) {
  Profile p;
  p.nvme = NvmeSpec{};
  for (int i = 0; i < drives; ++i) {
    NvmeDrive d;
    d.serial = "S" + std::to_string(i);
    p.nvme->drives.push_back(d);
  }
  return p;
}

Inventory two_on_nvme_for_count() {
  Inventory inv;
  inv.devices = {nvme_dev("0000:01:00.0", "nvme", "D0", "on", 0x0406, 0),
                 nvme_dev("0000:0b:00.0", "nvme", "D0", "on", 0x0406, 0)};
  inv.nvme_identities = {{"0000:01:00.0", "nvme", "S0", "WD Blue SN570", false},
                         {"0000:0b:00.0", "nvme", "S1", "WD Blue SN570", false}};
  return inv;
}

TEST(NvmeBindingCheck, VfioInD3hotIsAnError) {
  Inventory inv;
  inv.devices = {nvme_dev("0000:0b:00.0", "vfio-pci", "D3hot", "auto", 0x0103, 3)};
  const auto f = check_nvme_binding(Profile{}, inv);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_EQ(f[0].summary,
            "on vfio-pci but in D3 (BAR0 reads all-Fs there); power/control is auto (it will drop to D3hot when idle); "
            "COMMAND 0x0103 lacks Memory+BusMaster");
  EXPECT_EQ(f[0].observed["pmcsr"], "D3");
}

// A drive the profile names that no controller matches is said as plan says it (it was a warning
// about counts); a fixed-up drive is ok.
TEST(NvmeBindingCheck, FixedUpIsOkAndAnAbsentDriveIsNamed) {
  Inventory inv;
  inv.devices = {nvme_dev("0000:01:00.0", "nvme", "D0", "on", 0x0406, 0),
                 nvme_dev("0000:0b:00.0", "vfio-pci", "D0", "on", 0x0107, 0)};
  inv.nvme_identities = {{"0000:01:00.0", "nvme", "OTHER", "WD Blue SN570", false},
                         {"0000:0b:00.0", "vfio-pci", "S0", "WD Blue SN570", true}};
  const auto f = check_nvme_binding(wants(2), inv);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].subject, "node");
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_EQ(f[0].summary, "no NVMe controller matches the drive with serial S1");
  EXPECT_EQ(f[1].summary, "on nvme");
  EXPECT_EQ(f[2].severity, Severity::ok);
  EXPECT_EQ(f[2].summary, "on vfio-pci, D0, power/control on, Memory+BusMaster");
}

TEST(NvmeBindingCheck, MatchedDrivesNotYetOnVfioAreAWarningAboutTheCount) {
  Inventory inv = two_on_nvme_for_count();
  const auto f = check_nvme_binding(wants(2), inv);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f.back().subject, "node");
  EXPECT_EQ(f.back().severity, Severity::warning);
  EXPECT_EQ(f.back().summary, "the profile names 2 drive(s) for vfio-pci; 0 NVMe controller(s) are on vfio-pci");
}

// The profile names two drives by serial for vfio-pci; both are still on nvme.
Inventory two_on_nvme() {
  Inventory inv;
  inv.devices = {nvme_dev("0000:01:00.0", "nvme", "D0", "on", 0x0406, 0),
                 nvme_dev("0000:0b:00.0", "nvme", "D0", "on", 0x0406, 0)};
  inv.nvme_identities = {{"0000:01:00.0", "nvme", "S0", "WD Blue SN570", false},
                         {"0000:0b:00.0", "nvme", "S1", "WD Blue SN570", false}};
  return inv;
}

TEST(NvmeBindingCheck, AWantedDriveInUseIsAnErrorOnThatDriveWithTheReasons) {
  Inventory inv = two_on_nvme();
  BlockDeviceUse p1{"nvme1n1p1", {"/data"}, {}, false, std::string("ext4"), std::nullopt, false};
  BlockDeviceUse n1{"nvme1n1", {}, {"dm-0"}, false, std::nullopt, std::nullopt, false};
  inv.nvme_usage = {{"0000:01:00.0", {"nvme0"}, {}}, {"0000:0b:00.0", {"nvme1"}, {n1, p1}}};
  const auto f = check_nvme_binding(wants(2), inv);
  ASSERT_EQ(f.size(), 3u);
  // 01:00.0 is free: apply will bind it
  EXPECT_EQ(f[0].subject, "0000:01:00.0");
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_EQ(f[0].summary, "on nvme, the profile wants vfio-pci (serial S0)");
  EXPECT_EQ(f[0].remediation, "Run `p2pnode apply` (it binds the drive).");
  // 0b:00.0 is in use: refused, every reason on the drive's own finding
  EXPECT_EQ(f[1].check, "nvme.binding");
  EXPECT_EQ(f[1].subject, "0000:0b:00.0");
  EXPECT_EQ(f[1].severity, Severity::error);
  EXPECT_EQ(f[1].summary,
            "on nvme, the profile wants vfio-pci (serial S1), refused: nvme1n1 is held by dm-0 (dm, md or LVM); "
            "nvme1n1p1 is mounted at /data; nvme1n1p1 carries data: ext4");
  EXPECT_EQ(f[1].observed["refused"].size(), 3u);
  EXPECT_EQ(f[1].expected["driver"], "vfio-pci");
  EXPECT_EQ(f[1].remediation,
            "Unmount it, stop what holds it, swapoff; p2pnode never unbinds a drive in use. Then `p2pnode apply` "
            "binds it; or take the drive out of the profile.");
  EXPECT_EQ(f[2].subject, "node");
}

TEST(NvmeBindingCheck, DataOnAWipeOkDriveIsNotARefusal) {
  Inventory inv = two_on_nvme();
  inv.nvme_usage = {{"0000:01:00.0", {"nvme0"}, {}},
                    {"0000:0b:00.0", {"nvme1"}, {{"nvme1n1", {}, {}, false, std::string("xfs"), std::nullopt, false}}}};
  Profile p = wants(2);
  p.nvme->drives[1].wipe_ok = true;
  auto f = check_nvme_binding(p, inv);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[1].severity, Severity::warning);
  EXPECT_EQ(f[1].observed["wipe_ok_waived"][0], "nvme1n1 carries data: xfs");
  p.nvme->drives[1].wipe_ok = false;  // the same data without wipe_ok: refused, and the advice says so
  f = check_nvme_binding(p, inv);
  EXPECT_EQ(f[1].severity, Severity::error);
  EXPECT_NE(f[1].remediation.find("Set wipe_ok: true for this drive if its data may be lost"), std::string::npos)
      << f[1].remediation;
}

TEST(NvmeBindingCheck, SilentWithoutProfileOrVfio) {
  Inventory inv;
  inv.devices = {nvme_dev("0000:01:00.0", "nvme", "D0", "on", 0x0406, 0)};
  EXPECT_TRUE(check_nvme_binding(Profile{}, inv).empty());
}

}  // namespace
}  // namespace p2pnode::checks
