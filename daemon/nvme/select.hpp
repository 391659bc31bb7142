#pragma once
// Pure: which NVMe controllers the profile's drives name. Serial is preferred (addresses change
// with BIOS settings); a controller on vfio-pci has no nvme class entry, so its serial comes from
// what p2pnode remembered when it bound it.
#include <optional>
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"

namespace p2pnode::nvme {

using ControllerIdentity = p2pnode::NvmeControllerIdentity;  // core/inventory.hpp

struct Selected {
  const NvmeDrive* drive = nullptr;
  std::string bdf;
  std::string matched_by;  // "serial WD-123", "address 0000:0b:00.0", …
};

struct Selection {
  std::vector<Selected> selected;
  std::vector<std::string> problems;  // drives that match nothing, or too much
};

// Every key a drive gives (serial, model, address) must match. A drive matching several
// controllers is a problem, not a licence to take them all; so is one controller named twice.
Selection select_nvme_drives(const std::vector<NvmeDrive>& drives, const std::vector<ControllerIdentity>& ctrls);

// The profile key of a drive for messages: "serial X" / "model Y" / "address Z".

std::string trim(std::string s);

}  // namespace p2pnode::nvme
