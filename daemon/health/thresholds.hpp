#pragma once
// How fast each counter may rise before the health pass calls it a finding: the one place these
// limits live (the alert rules in prometheus/p2pnode-alerts.yml use the same figures; the table's
// comments in thresholds.cpp say where each comes from). A counter that healthy hardware moves
// (NVLink's corrected ECC, a few PCIe replays) is judged by its rate over the window, not by any rise.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/finding.hpp"

namespace p2pnode::health {

struct CounterLimit {
  const char* counter;
  std::uint64_t min_rise;  // a finding needs at least this many in the window …
  double per_second;       // … and at least this rate over it (0: the count alone decides)
  Severity severity;
  const char* source;      // where the figure comes from, for the finding's evidence
};

// A rate is the rise over the span its samples cover, but never over less than this: the first
// passes after a start cover seconds, and one burst (a self-test) is not a sustained rate.
inline constexpr double kMinRateSpanS = 60;

// NVLink counters as NVML names them (kNvlinkCounters); nullptr: not judged.
const CounterLimit* nvlink_limit(std::string_view counter);
// The GPU's own PCIe replay counter (NVML) and its rollovers.
const CounterLimit& gpu_pcie_replay_limit();
const CounterLimit& gpu_pcie_rollover_limit();
// sysfs aer_dev_* totals and the kernel log's AER reports, by class: correctable, nonfatal, fatal.
const CounterLimit& aer_limit(std::string_view aer_class);

double rate_per_second(std::uint64_t rise, double span_s);
bool over_limit(const CounterLimit& l, std::uint64_t rise, double span_s);
// "1000/s", "8/min": the limit for people.
std::string limit_text(const CounterLimit& l);

}  // namespace p2pnode::health
