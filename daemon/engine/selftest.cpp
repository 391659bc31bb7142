#include "engine/selftest.hpp"

#include <cstdio>
#include <map>

#include "engine/baseline.hpp"
#include "engine/expectations.hpp"

namespace p2pnode::engine {

RecordNotes record_selftest(RecordedState& st, const AgentRun& run, const SelftestSpec& spec, const Inventory& inv,
                            const std::string& trigger) {
  RecordNotes notes;
  SelftestRecord rec;
  rec.verdict = run.judgement.verdict;
  rec.reasons = run.judgement.reasons;
  rec.expectations = run.judgement.expectations;
  rec.trigger = trigger;
  rec.started_unix = run.started_unix;
  rec.duration_s = run.duration_s;
  if (run.result) {
    rec.result = run.result->raw;
    if (run.result->status != "error") {
      Inventory merged = inv;
      merge_interconnects(merged, *run.result);
      const auto cells = expectations(*run.result, merged);
      auto u = update_baselines(st.baselines, hardware_fingerprint(merged, *run.result), cells,
                                spec.max_drop_from_baseline, spec.baseline_runs);
      notes.baseline_reset = u.reset;
      std::map<std::string, const nlohmann::json*> by_key;
      for (const auto& c : u.cells) by_key[c["key"].get<std::string>()] = &c;
      for (std::size_t i = 0; i < rec.expectations.size() && i < cells.size(); ++i) {
        auto it = by_key.find(cells[i].key());
        if (it == by_key.end()) continue;
        rec.expectations[i]["baseline_gbps"] = (*it->second)["baseline_gbps"];
        rec.expectations[i]["regressed"] = (*it->second)["regressed"];
      }
      for (const auto& r : u.regressions) rec.warnings.push_back(r.describe());
    }
  }
  st.selftest_runs[rec.verdict]++;
  if (rec.verdict == "passed") {
    st.selftest_last_success_unix = run.started_unix + static_cast<std::int64_t>(run.duration_s);
    st.selftest_last_success_duration_s = run.duration_s;
  }
  st.selftest = std::move(rec);
  return notes;
}

Finding expectation_finding(const SelftestRecord& rec) {
  Finding f;
  f.check = "selftest.bandwidth";
  f.subject = "node";
  double lo = 0, hi = 0;
  const nlohmann::json* lowest = nullptr;
  int with_ratio = 0, below = 0, regressed = 0;
  for (const auto& e : rec.expectations) {
    if (!e.is_object()) continue;
    below += e.value("below_threshold", false) ? 1 : 0;
    regressed += e.value("regressed", false) ? 1 : 0;
    const auto r = e.find("ratio");
    if (r == e.end() || !r->is_number()) continue;
    const double v = r->get<double>();
    if (!with_ratio++ || v < lo) lo = v, lowest = &e;
    if (with_ratio == 1 || v > hi) hi = v;
  }
  char b[400];
  if (!lowest) {
    std::snprintf(b, sizeof b, "%zu bandwidth cell(s), none with a known expectation", rec.expectations.size());
  } else {
    const auto& e = *lowest;
    const std::string peer = e.value("peer_gpu", nlohmann::json()).is_string() ? "->" + e["peer_gpu"].get<std::string>() : "";
    std::snprintf(b, sizeof b, "%d cell(s) at %.2f-%.2f of expected; lowest %s %s%s (%s): %.1f of %.1f GB/s", with_ratio, lo, hi,
                  e.value("case", "?").c_str(), e.value("gpu", "?").c_str(), peer.c_str(), e.value("link", "?").c_str(),
                  e.value("measured_gbps", 0.0), e.value("expected_gbps", 0.0));
  }
  f.summary = b;
  if (below) f.summary += "; " + std::to_string(below) + " below threshold";
  if (regressed) f.summary += "; " + std::to_string(regressed) + " regressed against the baseline";
  f.severity = below || regressed ? Severity::warning : Severity::ok;
  f.observed = {{"cells", rec.expectations}, {"warnings", rec.warnings}};
  f.expected = "every cell at or above its threshold and within max_drop_from_baseline of its baseline";
  if (f.severity != Severity::ok)
    f.remediation = "Look at the narrowest link named for each slow cell (pcie.link), the GPUs' clocks and throttle "
                    "reasons (nvidia-smi -q -d PERFORMANCE) and what changed since the baseline (driver, BIOS, risers).";
  return f;
}

}  // namespace p2pnode::engine
