#pragma once
// p2pnode_gpu_info: one series per NVIDIA GPU that maps p2pnode's `gpu` label (the PCI address,
// 0000:06:00.0) to the labels dcgm-exporter puts on the same GPU: `gpu` there is NVML's index
// (here gpu_index), UUID, pci_bus_id (NVML's form, 00000000:06:00.0) and Hostname, so a PromQL
// join between the two exporters works (docs/monitoring.md, "Joining with dcgm-exporter").
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "judge/agent_result.hpp"

namespace p2pnode::judge {

struct GpuInfo {
  std::string gpu;         // p2pnode's label: the PCI address as sysfs writes it
  std::string gpu_index;   // NVML's index: NVIDIA GPUs in PCI bus order
  std::string uuid;        // GPU-…, from the last self-test's result; empty when none named it
  std::string pci_bus_id;  // NVML's form: 8-digit domain, upper-case hex
  std::string hostname;
};

// "0000:06:00.0" or "0000:3b:00.0" -> "00000000:06:00.0", "00000000:3B:00.0"; an address it
// cannot read is returned as it came.
std::string nvml_bus_id(std::string_view bdf);

// device_gpus: the recorded devices view's "gpus" (bdf, vendor_id); last: the last self-test's
// result (UUIDs), or null.
std::vector<GpuInfo> gpu_info(const nlohmann::json& device_gpus, const AgentResult* last, const std::string& hostname);

}  // namespace p2pnode::judge
