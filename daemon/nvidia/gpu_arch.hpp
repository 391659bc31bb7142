#pragma once
// Which driver branch drives which GPU: NVIDIA architectures by PCI device-id range, the first
// open-kernel-module branch that supports each, and what the P2P branches' users reported for it
// (issue threads cited in gpu_arch.cpp). Pure data and a pure judgement; no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory.hpp"

namespace p2pnode::nvidia {

struct IdRange {
  std::uint16_t first, last;  // inclusive
};

struct GpuArch {
  std::string_view name;      // "Blackwell (GB20x)"
  std::string_view examples;  // "RTX 5090 0x2b85, RTX 5080 0x2c02, RTX PRO 6000 0x2bb1"
  IdRange ids[3];             // up to three ranges; {0, 0} marks an unused slot
  int first_branch;           // the first driver branch (major) whose open module drives it
  std::string_view first_release;  // a release of that branch known to drive it, for the message
  std::string_view p2p;       // the P2P branches known for it and what their users reported
};

// The architecture of an NVIDIA device id, or nullptr (not a GPU p2pnode knows: no judgement).
const GpuArch* find_gpu_arch(std::uint16_t device_id);

// "550.90.07" -> 550; 0 when the version does not start with a number.
int driver_branch(std::string_view version);

// Why `version` cannot drive this device id (the message names the first branch that does), or
// nullopt when it can or when either is unknown.
std::optional<std::string> branch_cannot_drive(std::uint16_t device_id, std::string_view version);

// One line per GPU of the box that `version` cannot drive ("0000:01:00.0: driver 550.90.07 …").
std::vector<std::string> gpus_not_driven(const Inventory& inv, std::string_view version);

}  // namespace p2pnode::nvidia
