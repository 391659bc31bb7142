// NVML, opened at run time (dlopen libnvidia-ml.so.1, shipped with the driver), so the agent
// still needs nothing but glibc and the driver. Read-only queries: NVLink state, version and
// far end per link, and the driver's P2P status per pair.
#pragma once

#include <string>
#include <vector>

#include "p2pnode/agent/interconnect.hpp"

namespace p2pnode::agent {

// bus_ids: the devices' normalized PCI bus ids, in device index order. Never fails: when NVML
// is missing or refuses, source is "none" and reason says why (PCIe is then assumed).
// library: what to dlopen (tests pass a stand-in's path).
Interconnect read_interconnect(const std::vector<std::string>& bus_ids, const char* library = "libnvidia-ml.so.1");

}  // namespace p2pnode::agent
