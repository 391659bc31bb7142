#pragma once
// The node's own history: per pair and case, the bandwidths of its last runs. The baseline is
// their median (one bad run does not move it); a run more than a set fraction below it is a
// regression, even while above the threshold. The history is kept in the state file (it
// survives restarts) and starts over when the hardware or the driver changes (the fingerprint:
// the GPUs, their links, the driver version).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/inventory.hpp"
#include "core/result.hpp"
#include "judge/agent_result.hpp"
#include "judge/expectations.hpp"

namespace p2pnode::judge {

// Runs a baseline needs before it judges (the median of 3 ignores one bad run).
constexpr std::size_t kMinBaselineRuns = 3;

struct Baselines {
  std::string fingerprint;
  std::map<std::string, std::vector<double>> history;            // CellExpectation::key() -> GB/s, oldest first
  std::optional<double> baseline(const std::string& key) const;  // median; none below kMinBaselineRuns
};

// GPU addresses and device ids, their max PCIe links, the pair links (NV18, PHB …) and the
// driver version: what, when it changes, makes old figures meaningless.
std::string hardware_fingerprint(const Inventory& merged, const AgentResult& r);

struct Regression {
  std::string key, link;
  double measured_gbps = 0, baseline_gbps = 0;
  std::string describe() const;  // names both figures and the drop
};

struct BaselineUpdate {
  std::vector<Regression> regressions;             // against the history before this run
  std::string reset;                               // why the history started over; empty when it did not
  nlohmann::json cells = nlohmann::json::array();  // per cell: key, baseline_gbps, regressed
};
// Judges the cells against the baselines, then appends them (keeping the last `runs`).
BaselineUpdate update_baselines(Baselines& b, const std::string& fingerprint, const std::vector<CellExpectation>& cells,
                                double max_drop, int runs);

nlohmann::json to_json(const Baselines& b);
Result<Baselines> baselines_from_json(const nlohmann::json& j);

}  // namespace p2pnode::judge
