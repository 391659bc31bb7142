#pragma once
// Whether the IOMMU mode the machine is in is one the profile's platform.iommu allows: one answer
// for the check that reports it and the fix that changes the kernel command line.
#include "core/inventory.hpp"
#include "core/profile.hpp"

namespace p2pnode {

inline bool iommu_allowed(IommuPolicy policy, IommuMode mode) {
  switch (policy) {
    case IommuPolicy::any: return true;
    case IommuPolicy::off: return mode == IommuMode::off;
    case IommuPolicy::passthrough: return mode == IommuMode::passthrough;
    case IommuPolicy::off_or_passthrough: return mode == IommuMode::off || mode == IommuMode::passthrough;
  }
  return false;
}

}  // namespace p2pnode
