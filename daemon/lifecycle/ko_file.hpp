#pragma once
// A kernel module file as the kernel's module tools read it: DKMS installs modules compressed as
// the kernel's config says (Debian 13's 6.12: .ko.xz; Ubuntu: .ko.zst; Debian 12's 6.1: .ko), and
// the fields p2pnode compares (srcversion) are in the uncompressed .modinfo section. Pure: bytes in,
// bytes out; reading the file is the caller's (SysRoot).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace p2pnode::lifecycle {

// The module's ELF bytes: `bytes` decompressed by the format its name ends in (.ko.xz, .ko.zst),
// as they are for .ko. An error says which file and why (an unknown suffix, a corrupt stream, a
// result over max_size).
Result<std::vector<std::uint8_t>> module_elf(std::string_view path, std::span<const std::uint8_t> bytes,
                                             std::size_t max_size = 256u << 20);

// A field of the .modinfo section ("srcversion", "version", "vermagic") in a module's ELF bytes.
std::optional<std::string> modinfo_field(std::span<const std::uint8_t> elf, std::string_view field);

}  // namespace p2pnode::lifecycle
