#include "nvme/signature.hpp"

#include <cstring>

namespace p2pnode::nvme {
namespace {

using Bytes = std::span<const std::uint8_t>;

bool has(Bytes b, std::size_t off, const char* magic, std::size_t n) {
  return b.size() >= off + n && std::memcmp(b.data() + off, magic, n) == 0;
}
std::uint16_t le16(Bytes b, std::size_t off) {
  return b.size() >= off + 2 ? static_cast<std::uint16_t>(b[off] | (b[off + 1] << 8)) : 0;
}
std::uint32_t le32(Bytes b, std::size_t off) {
  return b.size() >= off + 4 ? static_cast<std::uint32_t>(le16(b, off) | (std::uint32_t{le16(b, off + 2)} << 16)) : 0;
}

std::optional<std::string> ext_kind(Bytes b) {
  constexpr std::size_t sb = 0x400;
  if (le16(b, sb + 0x38) != 0xEF53) { return std::nullopt; }
  const std::uint32_t compat = le32(b, sb + 0x5C), incompat = le32(b, sb + 0x60);
  if (incompat & (0x40 | 0x80 | 0x200)) {
    return "ext4";  // extents, 64bit, flex_bg
  }
  if (compat & 0x4) {
    return "ext3";  // has_journal
  }
  return "ext2";
}

// ZFS: the first vdev label's uberblock ring (128 KiB into the label, slots of 1 KiB or more) holds
// uberblocks whose magic is 0x00bab10c in the pool's byte order.
bool zfs_member(Bytes b) {
  for (std::size_t off = 128 * 1024; off + 8 <= b.size() && off < 256 * 1024; off += 1024) {
    const std::uint32_t lo = le32(b, off), hi = le32(b, off + 4);  // ub_magic, a 64-bit word
    if ((lo == 0x00bab10c && hi == 0) || (lo == 0 && hi == 0x0cb1ba00)) { return true; }
  }
  return false;
}

}  // namespace

std::optional<std::string> decode_block_signature(Bytes b) {
  if (has(b, 0, "bluestore block device\n", 23)) { return "Ceph BlueStore OSD"; }
  if (has(b, 4096 + 24, "\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81", 16)) { return "bcache"; }
  if (has(b, 0, "LUKS\xba\xbe", 6)) { return "LUKS"; }
  if (has(b, 0, "XFSB", 4)) { return "xfs"; }
  for (std::size_t sector = 0; sector < 4; ++sector) {
    if (has(b, sector * 512, "LABELONE", 8) && has(b, sector * 512 + 0x18, "LVM2 001", 8)) {
      return "LVM2 physical volume";
    }
  }
  if (le32(b, 0x1000) == 0xa92b4efc || le32(b, 0) == 0xa92b4efc) { return "md raid member"; }
  if (auto ext = ext_kind(b)) { return ext; }
  if (has(b, 0x10040, "_BHRfS_M", 8)) { return "btrfs"; }
  if (has(b, 4096 - 10, "SWAPSPACE2", 10) || has(b, 4096 - 10, "SWAP-SPACE", 10)) { return "swap"; }
  if (has(b, 512, "EFI PART", 8) || has(b, 4096, "EFI PART", 8)) { return "gpt partition table"; }
  if (has(b, 0x8001, "CD001", 5)) { return "iso9660"; }
  if (zfs_member(b)) { return "ZFS pool member"; }
  if (le16(b, 510) == 0xAA55) {
    if (has(b, 0x36, "FAT", 3) || has(b, 0x52, "FAT32", 5)) { return "vfat"; }
    if (has(b, 3, "NTFS    ", 8)) { return "ntfs"; }
    return "dos partition table";
  }
  return std::nullopt;
}

}  // namespace p2pnode::nvme
