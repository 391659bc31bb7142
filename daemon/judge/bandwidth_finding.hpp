#pragma once
// A self-test's bandwidth beside its expectations as one finding (check selftest.bandwidth): the
// range of measured / expected, the lowest cell, cells below their threshold or regressed.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/finding.hpp"

namespace p2pnode::judge {

// cells: the judgement's expectations with the baseline's figures merged in (baseline_gbps,
// regressed); warnings: the regressions described. ok, or warning when any cell is below its
// threshold or regressed.
Finding bandwidth_finding(const nlohmann::json& cells, const std::vector<std::string>& warnings);

}  // namespace p2pnode::judge
