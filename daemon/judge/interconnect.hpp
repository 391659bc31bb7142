#pragma once
// The driver's view of the GPU pairs, from a self-test agent document (its `interconnect`,
// read through NVML): merged into the inventory so that an NVLink pair is NV<n>, not its PCIe
// class. Used by the daemon after every self-test and by `p2pnode check --agent-result FILE`.
#include <nlohmann/json.hpp>

#include "core/inventory.hpp"
#include "core/result.hpp"

namespace p2pnode::judge {

// Sets inv.interconnects and inv.interconnect_source, and inv.gpu_memory from the devices'
// memory_bytes. A document without `interconnect` (an older agent) leaves the interconnects as they
// are. Errors name the bad field.
Status merge_agent_interconnect(Inventory& inv, const nlohmann::json& agent_document);

}  // namespace p2pnode::judge
