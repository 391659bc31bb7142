#pragma once
// Which driver branch drives which GPU: NVIDIA architectures by PCI device-id range, the first
// open-kernel-module branch that supports each, and what the P2P branches' users reported for it
// (issue threads cited in gpu_arch.cpp). Pure data and a pure judgement; no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/driver_version.hpp"
#include "core/inventory.hpp"

namespace p2pnode::nvidia {

struct IdRange {
  std::uint16_t first, last;  // inclusive
};

struct GpuArch {
  std::string_view name;           // "Blackwell (GB20x)"
  std::string_view examples;       // "RTX 5090 0x2b85, RTX 5080 0x2c02, RTX PRO 6000 0x2bb1"
  IdRange ids[3];                  // up to three ranges; {0, 0} marks an unused slot
  int first_branch;                // the first driver branch (major) whose open module drives it
  std::string_view first_release;  // a release of that branch known to drive it, for the message
  std::string_view p2p;            // the P2P branches known for it and what their users reported
};

// The architecture of an NVIDIA device id, or nullptr (not a GPU p2pnode knows: no judgement).
const GpuArch* find_gpu_arch(std::uint16_t device_id);

// Why `version` cannot drive this device id (the message names the first branch that does), or
// nullopt when it can or when either is unknown.
std::optional<std::string> branch_cannot_drive(std::uint16_t device_id, std::string_view version);

// One line per GPU of the box that `version` cannot drive ("0000:01:00.0: driver 550.90.07 …").
std::vector<std::string> gpus_not_driven(const Inventory& inv, std::string_view version);

// The P2P branch table: which patched branch brings P2P to which card (the forks' READMEs and
// issues, cited in gpu_arch.cpp). Data-center GPUs peer natively and are not in it.
struct P2pCard {
  std::string_view name;          // "RTX 5090 (GB202)"
  IdRange ids;                    // inclusive
  std::string_view generation;    // "Ada", "Blackwell": a box that mixes generations needs more
  std::string_view first_p2p;     // the first P2P release that brings P2P to it: "575.64.05"
  std::string_view first_branch;  // how it is named: "aikitoria's 575.64.05-p2p"
  std::string_view not_before;    // why earlier branches do not (what their users reported)
  std::string_view source;        // where first_p2p comes from: the branch's README, an issue (owner/repo#N)
};
const P2pCard* find_p2p_card(std::uint16_t device_id);

// Why the P2P branch of driver `version` cannot bring P2P to this card (the message names the
// first branch that can), or nullopt when it can or the card is not in the table.
std::optional<std::string> branch_cannot_bring_p2p(std::uint16_t device_id, std::string_view version);

// One line per GPU of the box that the P2P branch of `version` leaves without P2P.
std::vector<std::string> gpus_without_p2p(const Inventory& inv, std::string_view version);

// What the box needs beyond the branch: GPUs of two generations (Ada with Blackwell) do not peer
// through the patched module alone (aikitoria's 610.57.04-p2p ships patch-libcuda-p2p.py for that);
// nullopt when the box has one generation.
std::optional<std::string> mixed_generations(const Inventory& inv);

// Different models of one generation (an RTX PRO 6000 Blackwell beside RTX 5090s) peer from this
// P2P release on: aikitoria's 595.71.05-p2p README ("P2P also works between different devices of the
// same generation, for example RTX 5090 to RTX PRO 6000 Blackwell"); on 580.95.05-p2p a 5090, a
// 5070 Ti and 5060 Tis did not (aikitoria#13).
inline constexpr std::string_view kMixedModelsOneGeneration = "595.71.05";

// A 5090 that drives a monitor: what is known (no release is known to fix it for GB202).
inline constexpr std::string_view kDisplayAttached5090 =
    "a 5090 that drives a monitor breaks P2P between 5090s (aikitoria#9, #11, open); a display-aware BAR1 for GB202 "
    "was "
    "proposed on 610.43.03-p2p (aikitoria PR #34, #36), and that branch's README credits display support to GB206 only";

}  // namespace p2pnode::nvidia
