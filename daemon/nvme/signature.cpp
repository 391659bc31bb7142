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
  if (le16(b, sb + 0x38) != 0xEF53) return std::nullopt;
  const std::uint32_t compat = le32(b, sb + 0x5C), incompat = le32(b, sb + 0x60);
  if (incompat & (0x40 | 0x80 | 0x200)) return "ext4";  // extents, 64bit, flex_bg
  if (compat & 0x4) return "ext3";                       // has_journal
  return "ext2";
}

}  // namespace

std::optional<std::string> decode_block_signature(Bytes b) {
  if (has(b, 0, "LUKS\xba\xbe", 6)) return "LUKS";
  if (has(b, 0, "XFSB", 4)) return "xfs";
  for (std::size_t sector = 0; sector < 4; ++sector)
    if (has(b, sector * 512, "LABELONE", 8) && has(b, sector * 512 + 0x18, "LVM2 001", 8))
      return "LVM2 physical volume";
  if (le32(b, 0x1000) == 0xa92b4efc || le32(b, 0) == 0xa92b4efc) return "md raid member";
  if (auto ext = ext_kind(b)) return ext;
  if (has(b, 0x10040, "_BHRfS_M", 8)) return "btrfs";
  if (has(b, 4096 - 10, "SWAPSPACE2", 10) || has(b, 4096 - 10, "SWAP-SPACE", 10)) return "swap";
  if (has(b, 512, "EFI PART", 8) || has(b, 4096, "EFI PART", 8)) return "gpt partition table";
  if (has(b, 0x8001, "CD001", 5)) return "iso9660";
  if (le16(b, 510) == 0xAA55) {
    if (has(b, 0x36, "FAT", 3) || has(b, 0x52, "FAT32", 5)) return "vfat";
    if (has(b, 3, "NTFS    ", 8)) return "ntfs";
    return "dos partition table";
  }
  return std::nullopt;
}

}  // namespace p2pnode::nvme
