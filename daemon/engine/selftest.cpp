#include "engine/selftest.hpp"

#include <map>

#include "judge/baseline.hpp"
#include "judge/expectations.hpp"

namespace p2pnode::engine {

RecordNotes record_selftest(RecordedState& st, const judge::AgentRun& run, const SelftestSpec& spec, const Inventory& inv,
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
      judge::merge_interconnects(merged, *run.result);
      const auto cells = judge::expectations(*run.result, merged);
      auto u = judge::update_baselines(st.baselines, judge::hardware_fingerprint(merged, *run.result), cells,
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

}  // namespace p2pnode::engine
