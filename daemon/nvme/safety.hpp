#pragma once
// Pure: may p2pnode take this NVMe controller away from the kernel's nvme driver? The kernel never
// refuses an unbind, and unbinding under a mounted filesystem loses data, so we refuse for it.
// Model: SPDK setup.sh (mounts, holders, data signatures), plus /proc/swaps and the processes that
// hold the device open (/proc/<pid>/fd).
#include <optional>
#include <string>
#include <vector>

#include "core/inventory.hpp"

namespace p2pnode::nvme {

// One namespace or partition of the controller, and the controller's, as probe_nvme_usage() saw
// them (plain data in core/inventory.hpp, so the Inventory carries them).
using p2pnode::BlockDeviceUse;
using ControllerUse = p2pnode::NvmeControllerUse;

struct SafetyDecision {
  bool safe = true;
  std::vector<std::string> reasons;  // every reason, each naming its device
  std::vector<std::string> waived;   // reasons wipe_ok allowed (signatures, unreadable devices)
};

// Mounted, held, swap and open in a process always refuse: the kernel would pull storage from under
// a live user (a VM's disk, a database on the raw device, a Ceph OSD).
// A data signature or an unreadable device refuses unless the profile says the drive may be wiped.
SafetyDecision decide_unbind_safety(const ControllerUse& use, bool wipe_ok);

// "refusing to unbind 0000:0b:00.0 (nvme1) from nvme: nvme1n1p1 mounted at /data; …"
std::string describe_refusal(const ControllerUse& use, const SafetyDecision& d);

}  // namespace p2pnode::nvme
