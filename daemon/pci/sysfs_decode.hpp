#pragma once
// Pure decoders of sysfs PCI attribute text.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory.hpp"
#include "core/result.hpp"

namespace p2pnode::pci {

// `resource`: one "start end flags" hex line per resource; unused lines are all zero.
Result<std::vector<Bar>> decode_resource_table(std::string_view text);
// "0x10de" -> 0x10de (the whole text must be a hex number).
std::optional<std::uint64_t> parse_hex(std::string_view text);
// "16.0 GT/s PCIe" (also "16 GT/s", "2.5 GT/s PCIe") -> 16.0; "Unknown" -> nullopt.
std::optional<double> parse_link_speed(std::string_view text);
std::optional<int> parse_int(std::string_view text);
// `resourceN_resize`: hex bitmap, bit n = 2^(n+20) bytes.
std::optional<std::uint64_t> decode_resize_bitmap(std::string_view text);
// Class code to our kind (GPU: display controller of NVIDIA, function 0 of a GPU board, …).
DeviceKind classify(std::uint16_t vendor, std::uint32_t class_code);

}  // namespace p2pnode::pci
