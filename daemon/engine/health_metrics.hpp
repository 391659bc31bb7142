#pragma once
// The health pass's metrics, from the /v1/health body: AER counters per device and severity, links
// below their maximum, NVLink error counters per GPU, Xid events per GPU and Xid, the pass itself.
#include <string>

#include <nlohmann/json.hpp>

namespace p2pnode::engine {

// Prometheus text (appended to render_metrics' exposition; no family is in both).
std::string render_health_metrics(const nlohmann::json& health_body);

}  // namespace p2pnode::engine
