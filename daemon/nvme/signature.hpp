#pragma once
// Pure: what the first bytes of a block device say it holds (blkid's job, for the few formats
// that mean "someone's data is here"). Feed it the first kSignatureBytes of /dev/<name>.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace p2pnode::nvme {

// Enough to reach the btrfs superblock magic at 0x10040.
constexpr std::size_t kSignatureBytes = 0x40000;  // 256 KiB: ZFS's first uberblock ring ends there

// "ext4", "xfs", "btrfs", "gpt partition table", "dos partition table", "LVM2 physical volume",
// "swap", "vfat", "md raid member", "LUKS", "iso9660"; nullopt when none is recognised.
std::optional<std::string> decode_block_signature(std::span<const std::uint8_t> head);

}  // namespace p2pnode::nvme
