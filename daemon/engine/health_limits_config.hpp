#pragma once
// The daemon configuration's health.limits: a site's own figures for the health pass (NVLink rates,
// PCIe replays, AER, which Xids count and how much), over today's defaults (health/thresholds.hpp),
// each refused with its file, line and field when it is not a limit.
#include "health/thresholds.hpp"
#include "profile/yaml_reader.hpp"

namespace p2pnode::engine {

// Reads `health.limits` (absent: the limits stay as they are).
void read_health_limits(profile::MapReader& health, health::HealthLimits& limits);

}  // namespace p2pnode::engine
