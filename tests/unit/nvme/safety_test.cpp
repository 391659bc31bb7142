// The unbind safety decision on recorded block-device trees (tests/fixtures/blockdev/, written by
// make_blockdev.py there): partitions, dm holders, swap, native multipath, unknown signatures.
#include "nvme/safety.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "probe/nvme.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::nvme {
namespace {
namespace fs = std::filesystem;

ControllerUse usage(const std::string& name) {
  const sys::SysRoot root(std::string(P2PNODE_SOURCE_DIR) + "/tests/fixtures/blockdev/" + name);
  return probe::probe_nvme_usage(root, "0000:0b:00.0");
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) { s += x + "\n"; }
  return s;
}

TEST(NvmeSafety, CleanNamespaceIsSafe) {
  const auto use = usage("clean");
  ASSERT_EQ(use.block_devices.size(), 1u);
  EXPECT_EQ(use.controllers, std::vector<std::string>{"nvme1"});
  const auto d = decide_unbind_safety(use, false);
  EXPECT_TRUE(d.safe) << joined(d.reasons);
}

TEST(NvmeSafety, PartitionsMountedSwapAndSignaturesAreEveryOneListed) {
  const auto use = usage("partitions");
  ASSERT_EQ(use.block_devices.size(), 4u);
  const auto d = decide_unbind_safety(use, false);
  EXPECT_FALSE(d.safe);
  EXPECT_EQ(joined(d.reasons),
            "nvme1n1 carries data: gpt partition table\n"
            "nvme1n1p1 is mounted at /data\n"
            "nvme1n1p1 carries data: ext4\n"
            "nvme1n1p2 is in use as swap\n"
            "nvme1n1p2 carries data: swap\n"
            "nvme1n1p3 carries data: ext4\n");
  const std::string msg = describe_refusal(use, d);
  EXPECT_NE(msg.find("refusing to unbind 0000:0b:00.0 (nvme1) from nvme: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("never unbinds a drive in use"), std::string::npos) << msg;
}

TEST(NvmeSafety, WipeOkWaivesSignaturesButNeverMountsOrSwap) {
  const auto d = decide_unbind_safety(usage("partitions"), true);
  EXPECT_FALSE(d.safe);
  EXPECT_EQ(joined(d.reasons), "nvme1n1p1 is mounted at /data\nnvme1n1p2 is in use as swap\n");
  EXPECT_EQ(d.waived.size(), 4u);
}

TEST(NvmeSafety, DmHolderRefusesEvenWithWipeOk) {
  const auto d = decide_unbind_safety(usage("dm-holder"), true);
  EXPECT_FALSE(d.safe);
  EXPECT_EQ(joined(d.reasons), "nvme1n1 is held by dm-0 (dm, md or LVM)\n");
  const auto strict = decide_unbind_safety(usage("dm-holder"), false);
  EXPECT_EQ(strict.reasons.size(), 2u);  // held, and an LVM2 signature
}

TEST(NvmeSafety, MultipathHeadFoundThroughTheSubsystemNqn) {
  const auto use = usage("multipath");
  ASSERT_EQ(use.block_devices.size(), 2u);  // hidden path node + its head; not the other subsystem's head
  EXPECT_EQ(use.block_devices[0].name, "nvme1c1n1");
  EXPECT_TRUE(use.block_devices[0].hidden);
  EXPECT_EQ(use.block_devices[1].name, "nvme0n1");
  const auto d = decide_unbind_safety(use, false);
  EXPECT_EQ(joined(d.reasons), "nvme0n1 is mounted at /mnt/mp\nnvme0n1 carries data: ext4\n");
}

TEST(NvmeSafety, UnknownSignatureRefusesUnlessWipeOk) {
  const auto use = usage("unknown");
  const auto d = decide_unbind_safety(use, false);
  ASSERT_EQ(d.reasons.size(), 1u);
  EXPECT_NE(d.reasons[0].find("nvme1n1: signature unknown (cannot open /dev/nvme1n1"), std::string::npos)
      << d.reasons[0];
  EXPECT_NE(describe_refusal(use, d).find("wipe_ok: true"), std::string::npos);
  EXPECT_TRUE(decide_unbind_safety(use, true).safe);
}

TEST(NvmeSafety, UnmountedExt4IsData) {
  const auto d = decide_unbind_safety(usage("ext4-whole"), false);
  EXPECT_EQ(joined(d.reasons), "nvme1n1 carries data: ext4\n");
  EXPECT_TRUE(decide_unbind_safety(usage("ext4-whole"), true).safe);
}

// A drive with no signature that a process holds open (a VM's raw disk, a database on the device):
// never unbound, wipe_ok or not.
TEST(NvmeSafety, AProcessHoldingTheDeviceOpenRefusesEvenWithWipeOk) {
  const fs::path src = fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures/blockdev/clean";
  const p2pnode::test::TempDir scratch("nvme-open");
  const fs::path dir = scratch / "root";
  fs::copy(src, dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::create_directories(dir / "proc/4242/fd");
  std::ofstream(dir / "proc/4242/comm") << "qemu-system-x86\n";
  fs::create_symlink("/dev/nvme1n1", dir / "proc/4242/fd/17");
  fs::create_directories(dir / "proc/99999999999999999999/fd");  // junk in a recorded /proc: skipped
  const auto use = probe::probe_nvme_usage(sys::SysRoot(dir.string()), "0000:0b:00.0");
  ASSERT_EQ(use.block_devices.size(), 1u);
  EXPECT_EQ(use.block_devices[0].open_by, (std::vector<std::string>{"4242 (qemu-system-x86)"}));
  const auto d = decide_unbind_safety(use, true);
  EXPECT_FALSE(d.safe);
  EXPECT_EQ(joined(d.reasons), "nvme1n1 is open in process 4242 (qemu-system-x86)\n");
  EXPECT_NE(describe_refusal(use, d).find("stop what holds it"), std::string::npos);
}

}  // namespace
}  // namespace p2pnode::nvme
