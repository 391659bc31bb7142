// Statistics over measurement samples (host-only, no CUDA).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace p2pnode::agent {

struct Summary {
  std::size_t count = 0;
  double median = 0.0;
  double mean = 0.0;
  double min = 0.0;
  double max = 0.0;
  double p10 = 0.0;
  double p90 = 0.0;
  // (max - min) / median * 100; 0 when the median is 0.
  double spread_pct = 0.0;
};

// Percentile by linear interpolation between closest ranks (q in [0, 1]).
// Returns nullopt for an empty input or q outside [0, 1].
std::optional<double> percentile(std::vector<double> values, double q);

// Median (mean of the two middle values for an even count); nullopt when empty.
std::optional<double> median(std::vector<double> values);

// Summary of samples; nullopt when empty.
std::optional<Summary> summarize(const std::vector<double>& values);

}  // namespace p2pnode::agent
