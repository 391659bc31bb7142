#include "engine/selftest.hpp"

#include <map>

#include "gdrcopy/library.hpp"
#include "judge/baseline.hpp"
#include "judge/expectations.hpp"

namespace p2pnode::engine {

std::vector<std::string> selftest_agent_args(std::vector<std::string> args, const Profile& profile,
                                             const sys::SysRoot& root) {
  if (profile.gdrcopy && root.exists(gdrcopy::library_path(*profile.gdrcopy))) {
    args.push_back("--gdrapi");
    args.push_back(root.host_path(gdrcopy::library_path(*profile.gdrcopy)).string());
  }
  if (profile.selftest && !profile.selftest->cases.empty()) {
    std::string list;
    for (const auto& c : profile.selftest->cases) { list += (list.empty() ? "" : ",") + c; }
    args.push_back("--cases");
    args.push_back(list);
  }
  return args;
}

RecordNotes record_selftest(RecordedState& st, const judge::AgentRun& run, const SelftestSpec& spec,
                            const Inventory& inv, const std::string& trigger, const judge::Contention& contention) {
  RecordNotes notes;
  SelftestRecord rec;
  rec.verdict = run.judgement.verdict;
  rec.reasons = run.judgement.reasons;
  rec.notes = run.judgement.notes;
  rec.expectations = run.judgement.expectations;
  rec.trigger = trigger;
  rec.started_unix = run.started_unix;
  rec.duration_s = run.duration_s;
  if (contention.source != "absent") { rec.contention = judge::to_json(contention); }
  st.selftest_skipped.reset();
  if (contention.contended && !run.judgement.load_independent_failure) {
    // Reported with its figures, judged on nothing: the other job's traffic shares the links.
    if (run.result) { rec.result = run.result->raw; }
    std::vector<std::string> reasons = {"another process used the GPUs during the run (" + contention.describe() +
                                        "): its figures are shown, not judged (no thresholds, baseline or readiness)"};
    for (const auto& r : rec.reasons) { reasons.push_back("not judged: " + r); }
    rec.reasons = std::move(reasons);
    rec.verdict = "contended";
    for (auto& e : rec.expectations) {  // shown beside their thresholds, never held below them
      if (e.is_object()) { e["below_threshold"] = false; }
    }
    st.selftest_runs["contended"]++;
    st.selftest_contended = std::move(rec);
    notes.contended = true;
    return notes;
  }
  // A judged run supersedes the contended one before it: kept, a run started in the same second
  // would read as the newer of the two (started_unix has whole seconds).
  st.selftest_contended.reset();
  if (run.result) {
    rec.result = run.result->raw;
    if (run.result->status != "error" && !contention.contended) {  // a shared run's figures say nothing of the links
      Inventory merged = inv;
      judge::merge_interconnects(merged, *run.result);
      const auto cells = judge::expectations(*run.result, merged);
      auto u = judge::update_baselines(st.baselines, judge::hardware_fingerprint(merged, *run.result), cells,
                                       spec.max_drop_from_baseline, spec.baseline_runs);
      notes.baseline_reset = u.reset;
      std::map<std::string, const nlohmann::json*> by_key;
      for (const auto& c : u.cells) { by_key[c["key"].get<std::string>()] = &c; }
      for (std::size_t i = 0; i < rec.expectations.size() && i < cells.size(); ++i) {
        auto it = by_key.find(cells[i].key());
        if (it == by_key.end()) { continue; }
        rec.expectations[i]["baseline_gbps"] = (*it->second)["baseline_gbps"];
        rec.expectations[i]["regressed"] = (*it->second)["regressed"];
      }
      for (const auto& r : u.regressions) { rec.warnings.push_back(r.describe()); }
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
