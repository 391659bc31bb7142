// `p2pnode-agent --health`: NVML only (no CUDA context, no GPU work), so the daemon can run it
// beside a job: per GPU, per NVLink, the link state and its error counters, printed as
// one versioned JSON document (read by daemon/health/agent_health.cpp, which checks every field).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace p2pnode::agent {

inline constexpr int kHealthSchemaVersion = 1;

struct NvlinkHealth {
  unsigned link = 0;
  bool active = false;
  std::string remote_pci_bus_id;  // normalized; empty when NVML does not say
  // replay, recovery, crc_flit, crc_data, ecc_data (NVML's nvmlNvLinkErrorCounter_t order); nullopt: not supported
  std::optional<std::uint64_t> errors[5];
};

struct GpuHealth {
  unsigned index = 0;
  std::string pci_bus_id;  // normalized 0000:18:00.0
  std::string name;
  std::string problem;     // NVML refused something for this GPU
  std::vector<NvlinkHealth> links;  // only links NVML knows (present), active or not
};

struct HealthReport {
  bool available = false;
  std::string reason;  // why NVML is not available
  std::string driver_version;
  std::vector<GpuHealth> gpus;
};

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
