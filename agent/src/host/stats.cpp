#include "p2pnode/agent/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace p2pnode::agent {

std::optional<double> percentile(std::vector<double> values, double q) {
  if (values.empty() || !(q >= 0.0 && q <= 1.0)) { return std::nullopt; }
  std::sort(values.begin(), values.end());
  const double rank = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = static_cast<std::size_t>(std::ceil(rank));
  const double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

std::optional<double> median(std::vector<double> values) { return percentile(std::move(values), 0.5); }

std::optional<Summary> summarize(const std::vector<double>& values) {
  if (values.empty()) { return std::nullopt; }
  Summary s;
  s.count = values.size();
  const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  s.min = *mn;
  s.max = *mx;
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.median = *percentile(values, 0.5);
  s.p10 = *percentile(values, 0.1);
  s.p90 = *percentile(values, 0.9);
  s.spread_pct = s.median != 0.0 ? (s.max - s.min) / s.median * 100.0 : 0.0;
  return s;
}

}  // namespace p2pnode::agent
