#pragma once
// The Prometheus exposition of the recorded state (prometheus-cpp core + TextSerializer,
// text/plain; version=0.0.4). Rendered when a reconcile records, served as is: a scrape never
// runs a test and never reads the machine.
#include <string>

#include "engine/state.hpp"
#include "engine/views.hpp"

namespace p2pnode::engine {

constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string render_metrics(const RecordedState& s, const Runtime& rt);

}  // namespace p2pnode::engine
