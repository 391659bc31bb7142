#include "judge/bandwidth_finding.hpp"

#include <cstdio>

namespace p2pnode::judge {

Finding bandwidth_finding(const nlohmann::json& cells, const std::vector<std::string>& warnings) {
  Finding f;
  f.check = "selftest.bandwidth";
  f.subject = "node";
  double lo = 0, hi = 0;
  const nlohmann::json* lowest = nullptr;
  int with_ratio = 0, below = 0, regressed = 0;
  for (const auto& e : cells) {
    if (!e.is_object()) { continue; }
    below += e.value("below_threshold", false) ? 1 : 0;
    regressed += e.value("regressed", false) ? 1 : 0;
    const auto r = e.find("ratio");
    if (r == e.end() || !r->is_number()) { continue; }
    const double v = r->get<double>();
    if (!with_ratio++ || v < lo) { lo = v, lowest = &e; }
    if (with_ratio == 1 || v > hi) { hi = v; }
  }
  char b[400];
  if (!lowest) {
    std::snprintf(b, sizeof b, "%zu bandwidth cell(s), none with a known expectation", cells.size());
  } else {
    const auto& e = *lowest;
    const std::string peer =
        e.value("peer_gpu", nlohmann::json()).is_string() ? "->" + e["peer_gpu"].get<std::string>() : "";
    std::snprintf(b, sizeof b, "%d cell(s) at %.2f-%.2f of expected; lowest %s %s%s (%s): %.1f of %.1f GB/s",
                  with_ratio, lo, hi, e.value("case", "?").c_str(), e.value("gpu", "?").c_str(), peer.c_str(),
                  e.value("link", "?").c_str(), e.value("measured_gbps", 0.0), e.value("expected_gbps", 0.0));
  }
  f.summary = b;
  if (below) { f.summary += "; " + std::to_string(below) + " below threshold"; }
  if (regressed) { f.summary += "; " + std::to_string(regressed) + " regressed against the baseline"; }
  f.severity = below || regressed ? Severity::warning : Severity::ok;
  f.observed = {{"cells", cells}, {"warnings", warnings}};
  f.expected = "every cell at or above its threshold and within max_drop_from_baseline of its baseline";
  if (f.severity != Severity::ok) {
    f.remediation =
        "Look at the narrowest link named for each slow cell (pcie.link), the GPUs' clocks and throttle "
        "reasons (nvidia-smi -q -d PERFORMANCE) and what changed since the baseline (driver, BIOS, risers).";
  }
  return f;
}

}  // namespace p2pnode::judge
