// `p2pnode-agent --health`: NVML only (no CUDA context, no GPU work), so the daemon can run it
// beside a job: per GPU, per NVLink, the link state and its error counters; the driver's own verdict
// (its recovery action), the GPU's own PCIe view (replay counter, link generation and width), the
// memory state that decides whether bytes can be trusted (row remapping, volatile uncorrected ECC);
// per ordered pair, the driver's P2P status. Printed as one versioned JSON document (read by
// daemon/health/agent_health.cpp, which checks every field).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace p2pnode::agent {

inline constexpr int kHealthSchemaVersion = 2;

struct NvlinkHealth {
  unsigned link = 0;
  bool active = false;
  std::string remote_pci_bus_id;  // normalized; empty when NVML does not say
  // replay, recovery, crc_flit, crc_data, ecc_data (NVML's nvmlNvLinkErrorCounter_t order); nullopt: not supported
  std::optional<std::uint64_t> errors[5];
};

// The GPU's own view of its PCIe link (its own counters: boxes without AER files have no other).
struct PcieHealth {
  std::optional<std::uint64_t> replay, replay_rollover;  // NVML_FI_DEV_PCIE_REPLAY_(ROLLOVER_)COUNTER
  std::optional<unsigned> gen, max_gen, width, max_width;
};
// Memory state that decides whether bytes can be trusted.
struct MemoryHealth {
  std::optional<unsigned> remapped_correctable, remapped_uncorrectable;  // rows remapped so far
  std::optional<bool> remap_pending, remap_failure;                      // a remap waits for a reset; one failed
  std::optional<std::uint64_t> volatile_uncorrected;  // uncorrected ECC errors since the driver loaded
};

struct GpuHealth {
  unsigned index = 0;
  std::string pci_bus_id;  // normalized 0000:18:00.0
  std::string name;
  std::string problem;              // NVML refused something for this GPU
  std::vector<NvlinkHealth> links;  // only links NVML knows (present), active or not
  // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (0 none … 5 recover IMEX domain); nullopt: not answered
  // (drivers before 570 do not have the field), recovery_problem says why.
  std::optional<unsigned> recovery_action;
  std::string recovery_problem;
  PcieHealth pcie;
  MemoryHealth memory;
};

// The driver's P2P status of one ordered pair, for each capability NVML reports
// (nvmlDeviceGetP2PStatus; what `nvidia-smi topo -p2p r|w|n|a|p` prints).
inline constexpr const char* kP2pCapNames[5] = {"read", "write", "nvlink", "atomics", "pci"};
struct P2pStatus {
  unsigned gpu = 0, peer = 0;    // indices into gpus
  std::optional<int> status[5];  // NVML's nvmlGpuP2PStatus_t; nullopt: the call failed
};

struct HealthReport {
  bool available = false;
  std::string reason;  // why NVML is not available
  std::string driver_version;
  std::vector<GpuHealth> gpus;
  std::vector<P2pStatus> p2p;  // every ordered pair of GPUs NVML gave handles for
};

// "none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset", "recover_imex_domain",
// else "unknown_<n>".
// (P2P statuses are named by p2p_status_name() in interconnect.hpp.)
std::string recovery_action_name(unsigned action);

inline constexpr const char* kNvlinkErrorNames[5] = {"replay", "recovery", "crc_flit", "crc_data", "ecc_data"};

// Never fails: when NVML is missing or refuses, available is false and reason says why.
// library: what to dlopen (tests pass a stand-in's path).
HealthReport read_health(const char* library = "libnvidia-ml.so.1");
nlohmann::json health_json(const HealthReport& r, const std::string& agent_version);

// The --health entry point: `p2pnode-agent --health [--json]` (JSON is the only format). Returns the exit code.
int run_health(int argc, char** argv, const std::string& agent_version, const char* library = "libnvidia-ml.so.1");
// True when argv asks for --health (main dispatches before any CUDA call).
bool wants_health(int argc, char** argv);

}  // namespace p2pnode::agent
