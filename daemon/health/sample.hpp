#pragma once
// What one health pass read (probe/health_probe.cpp fills it; nothing here touches the machine).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "health/aer.hpp"
#include "health/kernel_log.hpp"
#include "health/xid.hpp"

namespace p2pnode::health {

// A GPU, NVMe drive or bridge on their paths, with where it sits (from the last discovery).
struct Endpoint {
  std::string bdf;
  std::string kind;                   // gpu, nvme
  std::vector<std::string> upstream;  // bridges from the root port down
  std::string root_complex;
  int numa_node = -1;
};

struct DeviceReading {
  std::string bdf;
  std::string kind;                      // gpu, nvme, bridge
  std::map<std::string, AerCounts> aer;  // "correctable", "nonfatal", "fatal"; empty: no AER statistics
  std::string aer_absent;                // why there are none (or a file that did not decode)
  LinkInfo link;
  bool link_idles = false;  // a GPU's own link: GPUs lower the speed when idle
};

inline constexpr const char* kNvlinkCounters[] = {"replay", "recovery", "crc_flit", "crc_data", "ecc_data"};

struct NvlinkLinkReading {
  int link = 0;
  bool active = false;
  std::string remote;                                          // far end's PCI bus id (GPU or NVSwitch), if known
  std::map<std::string, std::optional<std::uint64_t>> errors;  // kNvlinkCounters; nullopt: not supported
};
// The GPU's own view of its PCIe link, through NVML (where sysfs has no AER files).
struct GpuPcieReading {
  std::optional<std::uint64_t> replay, replay_rollover;
  std::optional<unsigned> gen, max_gen, width, max_width;
};
// The memory state that decides whether bytes can be trusted.
struct GpuMemoryReading {
  std::optional<std::uint64_t> remapped_correctable, remapped_uncorrectable, volatile_uncorrected;
  std::optional<bool> remap_pending, remap_failure;
};
struct AgentGpuReading {
  std::string gpu;
  std::vector<NvlinkLinkReading> links;
  std::string problem;  // NVML refused this GPU
  // The driver's recovery action ("none", "drain_p2p", …); empty: not answered (recovery_problem).
  std::string recovery_action, recovery_problem;
  GpuPcieReading pcie;
  GpuMemoryReading memory;
};
inline constexpr const char* kP2pCaps[] = {"read", "write", "nvlink", "atomics", "pci"};
// The driver's P2P status of one ordered pair: capability -> "ok", "chipset_not_supported", …;
// nullopt where NVML did not answer.
struct P2pStatusReading {
  std::string gpu, peer;
  std::map<std::string, std::optional<std::string>> caps;
};
struct AgentReading {
  bool read = false;
  std::string skipped;  // why not read (no agent, no NVML, a pass running, timed out …)
  std::string driver_version;
  bool driver_state = false;  // the document carried the driver's state (agent schema 2)
  std::vector<AgentGpuReading> gpus;
  std::vector<P2pStatusReading> p2p;
};

struct XidReading {
  std::string source;                      // /dev/kmsg
  std::string problem;                     // why it could not be read
  std::vector<XidEvent> events;            // new since the last pass
  std::vector<KernelEvent> kernel_events;  // the same log's other reports: fallen off the bus, AER
  std::optional<double> uptime_s;          // the kernel's clock now (/proc/uptime), to age events
  std::size_t oversize_records = 0;        // records over 8 KiB skipped unread (not the kernel's)
};

struct HealthSample {
  double mono_s = 0;  // monotonic seconds, for the windows
  std::int64_t unix_s = 0;
  double duration_s = 0;
  std::vector<DeviceReading> devices;
  AgentReading agent;  // what p2pnode-agent --health read through NVML
  XidReading xid;
};

}  // namespace p2pnode::health
