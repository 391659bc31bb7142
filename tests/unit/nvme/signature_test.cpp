#include "nvme/signature.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace p2pnode::nvme {
namespace {

std::vector<std::uint8_t> blank() { return std::vector<std::uint8_t>(kSignatureBytes, 0); }
void put(std::vector<std::uint8_t>& b, std::size_t off, const char* s) {
  std::memcpy(b.data() + off, s, std::strlen(s));
}

TEST(BlockSignature, ZeroesAreNothing) { EXPECT_FALSE(decode_block_signature(blank())); }
TEST(BlockSignature, ShortReadIsNothing) { EXPECT_FALSE(decode_block_signature(std::vector<std::uint8_t>(100, 0))); }

TEST(BlockSignature, ExtFamily) {
  auto b = blank();
  b[0x438] = 0x53, b[0x439] = 0xEF;
  EXPECT_EQ(decode_block_signature(b), "ext2");
  b[0x45C] = 0x04;
  EXPECT_EQ(decode_block_signature(b), "ext3");
  b[0x460] = 0x40;
  EXPECT_EQ(decode_block_signature(b), "ext4");
}

TEST(BlockSignature, Others) {
  struct Case {
    std::size_t off;
    const char* magic;
    const char* want;
  };
  for (const Case& c : {Case{0, "XFSB", "xfs"}, Case{0x10040, "_BHRfS_M", "btrfs"}, Case{4086, "SWAPSPACE2", "swap"},
                        Case{0x8001, "CD001", "iso9660"}, Case{0, "LUKS\xba\xbe", "LUKS"}}) {
    auto b = blank();
    put(b, c.off, c.magic);
    EXPECT_EQ(decode_block_signature(b), c.want) << c.magic;
  }
}

TEST(BlockSignature, PartitionTablesAndLvm) {
  auto gpt = blank();
  gpt[510] = 0x55, gpt[511] = 0xAA;
  EXPECT_EQ(decode_block_signature(gpt), "dos partition table");
  put(gpt, 512, "EFI PART");
  EXPECT_EQ(decode_block_signature(gpt), "gpt partition table");
  auto fat = blank();
  fat[510] = 0x55, fat[511] = 0xAA;
  put(fat, 0x52, "FAT32   ");
  EXPECT_EQ(decode_block_signature(fat), "vfat");
  auto lvm = blank();
  put(lvm, 512, "LABELONE");
  put(lvm, 512 + 0x18, "LVM2 001");
  EXPECT_EQ(decode_block_signature(lvm), "LVM2 physical volume");
  auto md = blank();
  md[0x1000] = 0xfc, md[0x1001] = 0x4e, md[0x1002] = 0x2b, md[0x1003] = 0xa9;
  EXPECT_EQ(decode_block_signature(md), "md raid member");
}

// Data a drive carries that the earlier list missed (a second hostile corpus planned an unbind of a
// Ceph OSD without wipe_ok): the on-disk headers as each project writes them.
TEST(BlockSignature, BlueStoreBcacheAndZfs) {
  auto osd = blank();  // Ceph's bluestore_bdev_label_t: "bluestore block device\n<osd uuid>\n" at offset 0
  put(osd, 0, "bluestore block device\n6e1f1a1c-0b3e-4d2a-9b6c-2f1c3e4d5a6b\n");
  EXPECT_EQ(decode_block_signature(osd), "Ceph BlueStore OSD");
  auto cache = blank();  // bcache's cache_sb at 4 KiB: csum, offset, version, then the 16-byte magic
  const std::uint8_t magic[16] = {0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca,
                                  0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81};
  std::memcpy(cache.data() + 4096 + 24, magic, sizeof magic);
  EXPECT_EQ(decode_block_signature(cache), "bcache");
  auto zfs = blank();  // vdev label 0's uberblock ring at 128 KiB: ub_magic 0x00bab10c (64-bit, pool byte order)
  const std::size_t slot = 128 * 1024 + 5 * 1024;
  zfs[slot] = 0x0c, zfs[slot + 1] = 0xb1, zfs[slot + 2] = 0xba, zfs[slot + 3] = 0x00;
  EXPECT_EQ(decode_block_signature(zfs), "ZFS pool member");
  auto zfs_be = blank();
  zfs_be[slot + 5] = 0xba, zfs_be[slot + 6] = 0xb1, zfs_be[slot + 7] = 0x0c;
  EXPECT_EQ(decode_block_signature(zfs_be), "ZFS pool member");
  auto near = blank();  // the magic outside the ring, or half of it, is nothing
  near[64 * 1024] = 0x0c, near[64 * 1024 + 1] = 0xb1, near[64 * 1024 + 2] = 0xba;
  near[slot] = 0x0c, near[slot + 1] = 0xb1, near[slot + 2] = 0xba, near[slot + 4] = 0x01;
  EXPECT_FALSE(decode_block_signature(near));
}

}  // namespace
}  // namespace p2pnode::nvme
