#pragma once
// The self-test's figures beside what the hardware should do. The agent's view of the pairs
// (NVLink through NVML) is merged into the inventory first, so that an NVLink pair is NV<n>
// everywhere: check, REST, metrics and thresholds.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/inventory.hpp"
#include "judge/agent_result.hpp"

namespace p2pnode::judge {

// Sets inv.interconnects (and interconnect_source) from the document's `interconnect`: each pair
// by its two GPUs' PCI addresses, the NVLink generation from NVML's version and the GPU's
// compute capability. A document without one (an older agent) leaves the inventory as it is.
void merge_interconnects(Inventory& inv, const AgentResult& r);
void merge_interconnects(Inventory& inv, const nlohmann::json& agent_document);

// One measured bandwidth cell beside its expectation.
struct CellExpectation {
  std::string case_key;           // ce_write_bandwidth, …, host_device_bandwidth
  int src = -1, dst = -1;         // device indices; host cells: src = the GPU, dst = -1
  std::string gpu, peer_gpu;      // PCI addresses (peer empty for host cells)
  std::string engine, direction;  // ce|sm, write|read|bidirectional; host: ce, h2d|d2h; bar_copy: cpu, h2d|d2h
  std::string link;               // NV18, PIX … SYS; PCIe for host cells
  double measured_gbps = 0;
  std::optional<double> ceiling_gbps, expected_gbps;  // none: no link figure known
  double efficiency = 0;
  std::string narrowest;                // the link that sets the ceiling
  std::optional<double> ratio() const;  // measured / expected
  std::string key() const;              // "ce_write_bandwidth 0000:00:06.0->0000:00:07.0"
};

// Every bandwidth cell of the result, pair and host, with its expectation; inv should already
// hold the result's interconnects. A GPU missing from inv is taken from the document alone (its
// own PCIe link, no bridges).
std::vector<CellExpectation> expectations(const AgentResult& r, const Inventory& inv);

nlohmann::json to_json(const CellExpectation& e);

}  // namespace p2pnode::judge
