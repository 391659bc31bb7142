#pragma once
// Deciding the IOMMU mode from what sysfs, the command line and ACPI show (pure).
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory.hpp"

namespace p2pnode::pci {

// The iommu-related arguments of a kernel command line (intel_iommu=, amd_iommu=, iommu=,
// iommu.passthrough=, iommu.strict=).
std::vector<std::string> iommu_cmdline_args(std::string_view cmdline);

// Fills state.mode and state.evidence from units, cmdline_args, acpi_tables, group_types.
// A noiommu vfio group never makes the IOMMU look on: /sys/class/iommu decides whether
// a translating unit exists at all.
void decide_iommu_mode(IommuState& state);

}  // namespace p2pnode::pci
