#pragma once
// The self-test agent's document (api/agent-result.schema.json, schema_version 1) as the judge reads
// it: parsed and checked, never trusted blindly: bounded size and nesting, every field it uses
// type-checked, indices in range. Errors name the path of what is wrong.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/inventory.hpp"
#include "core/result.hpp"

namespace p2pnode::judge {

constexpr int kAgentSchemaVersion = 1;
constexpr std::size_t kMaxAgentOutputBytes = 4 << 20;
constexpr int kMaxJsonDepth = 32;

struct AgentSummary {  // statistics over the timed samples; the median is the figure
  double median = 0;
};

struct AgentCell {
  std::optional<int> src, dst, gpu;    // pair cells: src/dst; gpu cells: gpu
  std::string nvme, writer, pair_gpu;  // nvme cells (nvme_doorbell): the drive, host|gpu|none, its GPU
  std::string status;                  // passed, failed, waived
  std::string reason;
  std::optional<double> bandwidth_gbps, direction_bandwidth_gbps, latency_ns;
  std::optional<double> h2d_gbps, d2h_gbps;
  std::optional<double> bar_write_gbps, bar_read_gbps;  // bar_copy: CPU stores and loads through the BAR
  std::optional<double> peer_access;
  std::uint64_t integrity_bad_bytes = 0, integrity_checked_bytes = 0;
};

struct AgentCase {
  std::string key, status, shape, reason;
  double duration_s = 0;
  std::vector<AgentCell> cells;
};

struct AgentDevice {
  int index = 0;
  std::string name, uuid, pci_bus_id;
  int compute_capability_major = 0;  // 0 when the document does not say
};

// How the driver connects one unordered pair (the document's `interconnect`, read through NVML).
struct AgentPairLink {
  int a = 0, b = 0;
  int nvlinks = 0;                                // 0: PCIe
  unsigned nvlink_version = 0;                    // nvmlNvlinkVersion_t
  std::string via;                                // direct, nvswitch; empty for PCIe
  std::map<std::string, std::string> p2p_status;  // read, write, nvlink, atomics -> ok, chipset_not_supported, …
};

struct AgentResult {
  std::string agent_version, started_at, status, error;
  int exit_code = 0;
  double duration_s = 0;
  std::vector<AgentDevice> devices;
  std::string interconnect_source;  // nvml, none; empty: an older agent
  std::string interconnect_reason;  // source none: why
  std::vector<AgentPairLink> interconnect;
  std::vector<AgentCase> cases;
  std::uint64_t cases_passed = 0, cases_failed = 0, cases_waived = 0;
  std::uint64_t integrity_checked_bytes = 0, integrity_bad_bytes = 0;
  nlohmann::json raw;  // the whole document, as checked

  const AgentDevice* device(int index) const;
  const AgentPairLink* pair_link(int a, int b) const;  // either order
};

// Deepest nesting of arrays and objects outside strings; guards the recursive JSON parser.
int json_nesting_depth(std::string_view text);
// Parses and checks one agent document. Errors say what was wrong and where ("cases[2].cells[0].src: …").
Result<AgentResult> parse_agent_result(std::string_view text);
// The same checks on an already parsed document (the one kept in the state file).
Result<AgentResult> check_agent_document(nlohmann::json doc);

}  // namespace p2pnode::judge
