#pragma once
// How fast each counter may rise before the health pass calls it a finding: the one place these
// limits live (the alert rules in prometheus/p2pnode-alerts.yml use the same figures; the table's
// comments in thresholds.cpp say where each comes from). A counter that healthy hardware moves
// (NVLink's corrected ECC, a few PCIe replays) is judged by its rate over the window, not by any rise.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.hpp"

namespace p2pnode::health {

struct CounterLimit {
  std::string counter;
  std::uint64_t min_rise = 1;  // a finding needs at least this many in the window …
  double per_second = 0;       // … and at least this rate over it (0: the count alone decides)
  Severity severity = Severity::warning;
  std::string source;  // where the figure comes from, for the finding's evidence
};

// Every limit the health pass judges by: today's figures (defaults(), their sources in
// thresholds.cpp and docs/health.md) unless the daemon's configuration sets its own
// (health.limits, engine/config.cpp).
struct HealthLimits {
  std::vector<CounterLimit> nvlink;  // by NVML counter name: replay, recovery, crc_flit, crc_data, ecc_data
  CounterLimit pcie_replay, pcie_rollover;
  CounterLimit aer_correctable, aer_nonfatal, aer_fatal;
  std::set<int> xid_ignored;             // Xids that never count (a site's known noise)
  std::map<int, Severity> xid_severity;  // a site's own severity for an Xid

  const CounterLimit* nvlink_limit(std::string_view counter) const;  // nullptr: not judged
  CounterLimit* nvlink_limit(std::string_view counter);
  const CounterLimit& aer_limit(std::string_view aer_class) const;  // correctable, nonfatal, fatal
  static const HealthLimits& defaults();
};

// A rate is the rise over the span its samples cover, but never over less than this: the first
// passes after a start cover seconds, and one burst (a self-test) is not a sustained rate.
inline constexpr double kMinRateSpanS = 60;

double rate_per_second(std::uint64_t rise, double span_s);
bool over_limit(const CounterLimit& l, std::uint64_t rise, double span_s);
// "1000/s", "8/min": the limit for people.
std::string limit_text(const CounterLimit& l);

}  // namespace p2pnode::health
