#pragma once
// The agent's NVML-only health document (`p2pnode-agent --health --json`, agent/src/host/health.cpp):
// per GPU, per NVLink, the link state and its error counters. Checked strictly and bounded: the
// daemon never trusts an agent's output blindly.
#include <string_view>

#include "core/result.hpp"
#include "health/sample.hpp"

namespace p2pnode::health {

inline constexpr int kAgentHealthSchemaVersion = 1;

// An error names the first field that is missing or of the wrong type.
Result<NvlinkReading> decode_agent_health(std::string_view text);

}  // namespace p2pnode::health
