#pragma once
// The VRAM each GPU reports about itself (modded cards carry more than their model: a 48 GB
// "4090 D"), from nvidia-smi's CSV. Pure: the caller runs the command and passes its output.
#include <map>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/units.hpp"

namespace p2pnode::nvidia {

// The argv that prints "pci.bus_id, memory.total" per GPU in MiB.
inline const char* const kSmiMemoryArgv[] = {"nvidia-smi", "--query-gpu=pci.bus_id,memory.total",
                                             "--format=csv,noheader,nounits"};

// "00000000:01:00.0, 24564" lines -> {"0000:01:00.0": 24564 MiB}; the bus id in sysfs form
// (4-digit domain, lower case). An unreadable line is an error naming it.
Result<std::map<std::string, Bytes>> parse_smi_memory(std::string_view csv);

// "00000000:3B:00.0" (NVML) or "0000:3b:00.0" -> "0000:3b:00.0"; "" when it is not a bus id.
std::string sysfs_bus_id(std::string_view bus_id);

}  // namespace p2pnode::nvidia
