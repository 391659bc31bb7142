// How the driver connects each GPU pair (NVLink or PCIe), as NVML reports it. The NVML calls
// live in src/gpu/nvml.cpp (libnvidia-ml.so.1 opened at run time); this part is plain C++: the
// data model, turning per-link records into pairs, and the JSON.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace p2pnode::agent {

// nvmlGpuP2PStatus_t: 0 ok, 1 chipset_not_supported, 2 gpu_not_supported,
// 3 ioh_topology_not_supported, 4 disabled_by_regkey, 5 not_supported, 6 unknown.
const char* p2p_status_name(int nvml_status);

// "00000000:3B:00.0" (NVML) -> "0000:3b:00.0" (sysfs, CUDA); empty when it is not a bus id.
std::string normalize_bus_id(std::string_view nvml_bus_id);

struct NvLinkRecord {  // one active NVLink of a GPU
  unsigned link = 0;
  unsigned version = 0;       // nvmlNvlinkVersion_t (6 = NVLink 4.0)
  std::string remote_bus_id;  // normalized; a GPU's or an NVSwitch's
};

struct PairInterconnect {
  int a = 0, b = 0;  // device indices, a < b
  int nvlinks = 0;   // 0: PCIe
  unsigned nvlink_version = 0;
  std::string nvlink_via;  // "direct" or "nvswitch"; empty for PCIe
  // nvmlDeviceGetP2PStatus per capability: read, write, nvlink, atomics (names above).
  std::vector<std::pair<std::string, std::string>> p2p_status;
};

struct Interconnect {
  std::string source = "none";  // "nvml" or "none"
  std::string reason;           // why NVML gave nothing (source "none")
  std::string nvml_driver_version;
  std::vector<PairInterconnect> pairs;
};

// Pairs from each GPU's active links (bus_ids[i] is device i's normalized bus id). A link whose
// far end is another GPU counts for that pair; links to anything else (NVSwitch) count for every
// pair that nvlink_p2p_ok(i, j) says is reachable over NVLink: min(i's, j's switch links).
std::vector<PairInterconnect> pairs_from_links(const std::vector<std::string>& bus_ids,
                                               const std::vector<std::vector<NvLinkRecord>>& links,
                                               const std::function<bool(int, int)>& nvlink_p2p_ok);

nlohmann::json to_json(const Interconnect& ic);

}  // namespace p2pnode::agent
