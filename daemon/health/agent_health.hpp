#pragma once
// The agent's NVML-only health document (`p2pnode-agent --health --json`, agent/src/host/health.cpp):
// per GPU, per NVLink, the link state and its error counters; from schema 2 on also the driver's
// recovery action, the GPU's PCIe counters and link, its memory state, and the P2P status of every
// ordered pair (schema 1 documents, of older agents, are still read, without those). Checked
// strictly: the daemon never trusts an agent's output blindly.
#include <string_view>

#include "core/result.hpp"
#include "health/sample.hpp"

namespace p2pnode::health {

inline constexpr int kAgentHealthSchemaVersion = 2;  // 1 is read too

// An error names the first field that is missing or of the wrong type.
Result<AgentReading> decode_agent_health(std::string_view text);

}  // namespace p2pnode::health
