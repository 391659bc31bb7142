// The driver's own word on each GPU and pair, through NVML (src/host/driver_state.cpp). Internal to
// the host library: health.cpp resolves the calls once and reads each GPU.
#pragma once

#include <vector>

#include "nvml_lib.hpp"
#include "p2pnode/agent/health.hpp"

namespace p2pnode::agent {

// The optional entry points (each may be missing from an older NVML).
struct DriverCalls {
  nvml::Return (*field_values)(nvml::Device, int, void*) = nullptr;
  nvml::Return (*replay)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*gen)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*max_gen)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*width)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*max_width)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*remapped_rows)(nvml::Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvml::Return (*ecc_total)(nvml::Device, int, int, unsigned long long*) = nullptr;
  nvml::Return (*p2p_status)(nvml::Device, nvml::Device, int, int*) = nullptr;
  bool resolve(nvml::Lib& n);
};

// Recovery action, PCIe replay counters and link, row remapping and volatile ECC into g.
void read_driver_state(const nvml::Lib& n, const DriverCalls& c, nvml::Device dev, GpuHealth& g);
// The replay, recovery and flit CRC counters of every link (NVML_FI_DEV_NVLINK_ERROR_DL_*, scopeId =
// link) in one call; counters it does not answer stay empty (the caller reads them one by one).
void read_link_counters(const DriverCalls& c, nvml::Device dev, std::vector<NvlinkHealth>& links);
// Every ordered pair of devs (null handles skipped).
std::vector<P2pStatus> read_p2p_status(const DriverCalls& c, const std::vector<nvml::Device>& devs);

}  // namespace p2pnode::agent
