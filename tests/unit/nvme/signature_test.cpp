#include "nvme/signature.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace p2pnode::nvme {
namespace {

std::vector<std::uint8_t> blank() { return std::vector<std::uint8_t>(kSignatureBytes, 0); }
void put(std::vector<std::uint8_t>& b, std::size_t off, const char* s) { std::memcpy(b.data() + off, s, std::strlen(s)); }

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
  struct Case { std::size_t off; const char* magic; const char* want; };
  for (const Case& c : {Case{0, "XFSB", "xfs"}, Case{0x10040, "_BHRfS_M", "btrfs"},
                        Case{4086, "SWAPSPACE2", "swap"}, Case{0x8001, "CD001", "iso9660"},
                        Case{0, "LUKS\xba\xbe", "LUKS"}}) {
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

}  // namespace
}  // namespace p2pnode::nvme
