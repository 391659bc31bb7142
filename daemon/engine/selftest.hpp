#pragma once
// One self-test run recorded as the daemon records it: the judge's verdict, the expectations,
// the node's baseline (regressions are warnings), the counters. The reconcile pass and
// `p2pnode selftest judge` (a recorded sequence of agent results) share it.
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "judge/verdict.hpp"
#include "engine/state.hpp"

namespace p2pnode::engine {

struct RecordNotes {
  std::string baseline_reset;  // why the history started over; empty when it did not
};

// run.judgement must come from judge::judge_agent_result (or judge_agent_run). Updates st.selftest,
// st.selftest_runs, the last success and st.baselines.
RecordNotes record_selftest(RecordedState& st, const judge::AgentRun& run, const SelftestSpec& spec, const Inventory& inv,
                            const std::string& trigger);

}  // namespace p2pnode::engine
