#pragma once
// Pure decoders of PCI configuration space bytes (as read from sysfs `config`).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/inventory.hpp"

namespace p2pnode::pci {

using Bytes = std::span<const std::uint8_t>;

constexpr std::uint8_t kCapPm = 0x01, kCapPcie = 0x10;
constexpr std::uint16_t kExtCapAcs = 0x000D, kExtCapRebar = 0x0015;
constexpr std::uint16_t kCmdMemory = 0x2, kCmdBusMaster = 0x4;

std::optional<std::uint16_t> read16(Bytes cfg, std::size_t off);
std::optional<std::uint32_t> read32(Bytes cfg, std::size_t off);

// Offset of a standard capability found by walking the list from 0x34 (never a fixed offset).
std::optional<std::size_t> find_capability(Bytes cfg, std::uint8_t id);
// Offset of an extended capability (from 0x100); nullopt when absent or the area is unreadable.
std::optional<std::size_t> find_ext_capability(Bytes cfg, std::uint16_t id);
// True when the extended area is shorter than 4 KiB, its header is zero, or a header in the chain
// has its ID zeroed (virtualised configs mask capabilities that way, as the recorded H100's does).
bool ext_caps_hidden(Bytes cfg);

// PMCSR D-state (0-3) from the PM capability.
std::optional<int> decode_pm_state(Bytes cfg);
std::optional<std::uint16_t> decode_command(Bytes cfg);
// Link capabilities and status from the PCI Express capability.
LinkInfo decode_pcie_link(Bytes cfg);
std::vector<RebarEntry> decode_rebar(Bytes cfg);
std::optional<AcsInfo> decode_acs(Bytes cfg);

// PCIe "Supported Link Speeds" encoding (1 = 2.5 GT/s … 6 = 64 GT/s).
std::optional<double> link_speed_gts(int encoding);

}  // namespace p2pnode::pci
