#pragma once
// Pure: may p2pnode take this NVMe controller away from the kernel's nvme driver? The kernel never
// refuses an unbind, and unbinding under a mounted filesystem loses data, so we refuse for it.
// Model: SPDK setup.sh (mounts, holders, data signatures), plus /proc/swaps.
#include <optional>
#include <string>
#include <vector>

namespace p2pnode::nvme {

// One namespace or partition of the controller, as probe_nvme_usage() saw it.
struct BlockDeviceUse {
  std::string name;                      // nvme1n1, nvme1n1p2, nvme0c0n1
  std::vector<std::string> mountpoints;  // from /proc/self/mountinfo and /proc/mounts
  std::vector<std::string> holders;      // /sys/class/block/<name>/holders: dm-0, md127
  bool swap = false;                     // listed in /proc/swaps
  std::optional<std::string> signature;  // decode_block_signature() of /dev/<name>
  std::optional<std::string> unreadable; // why /dev/<name> could not be read (signature unknown)
  bool hidden = false;                   // a multipath path node: no /dev entry of its own
};

struct ControllerUse {
  std::string bdf;
  std::vector<std::string> controllers;  // nvme1 (several for odd multi-controller functions)
  std::vector<BlockDeviceUse> block_devices;
};

struct SafetyDecision {
  bool safe = true;
  std::vector<std::string> reasons;  // every reason, each naming its device
  std::vector<std::string> waived;   // reasons wipe_ok allowed (signatures, unreadable devices)
};

// Mounted, held and swap always refuse: the kernel would pull storage from under a live user.
// A data signature or an unreadable device refuses unless the profile says the drive may be wiped.
SafetyDecision decide_unbind_safety(const ControllerUse& use, bool wipe_ok);

// "refusing to unbind 0000:0b:00.0 (nvme1) from nvme: nvme1n1p1 mounted at /data; …"
std::string describe_refusal(const ControllerUse& use, const SafetyDecision& d);

}  // namespace p2pnode::nvme
