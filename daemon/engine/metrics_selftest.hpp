#pragma once
// The last self-test in /metrics: when it ran and whether it passed, every pair's figures with its
// path class, the constants once per class, and each cell's verdict (regressed, below its
// threshold: only those unless metrics.detail is full) with the node's worst ratio.
#include <prometheus/registry.h>

#include "engine/state.hpp"
#include "engine/views.hpp"

namespace p2pnode::engine {

void selftest_result_metrics(prometheus::Registry& reg, const RecordedState& s, const Runtime& rt);

}  // namespace p2pnode::engine
