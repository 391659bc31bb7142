#pragma once
// The 512 MiB peer-address alignment that NVIDIA's static-BAR1 P2P path demands, and the platforms
// where the peer address is not so aligned. Pure: callers pass the tree's source text and the
// inventory; the builtin patch peer-address-alignment (patches/) turns the refusal into a warning.
#include <optional>
#include <string>
#include <string_view>

#include "core/inventory.hpp"

namespace p2pnode::nvidia {

// Where the check lives in open-gpu-kernel-modules (550 to 565 at least; the core, not kernel-open).
inline constexpr std::string_view kPeerAlignmentFile = "src/nvidia/src/kernel/gpu/bus/arch/hopper/kern_bus_gh100.c";
inline constexpr std::string_view kPeerAlignmentPatch = "peer-address-alignment";

// From kern_bus_gh100.c's text: true when a peer DMA address not aligned at RM_PAGE_SIZE_512M makes
// the mapping fail (the check returns an error), false when the check is there but only reports,
// nullopt when the file holds no such check (another layout: unknown).
std::optional<bool> demands_peer_alignment(std::string_view kern_bus_text);

// When the box's root complex is one where the peer address is reported 4 MiB into BAR1 (AMD client
// parts: X570/B550 Matisse/Vermeer, AM5 Raphael/Granite Ridge, Renoir/Cezanne) and it has two or more
// GPUs: a description ("AMD Raphael/Granite Ridge root complex 1022:14d8 (AM5)"); else nullopt.
std::optional<std::string> offset_peer_address_platform(const Inventory& inv);

}  // namespace p2pnode::nvidia
