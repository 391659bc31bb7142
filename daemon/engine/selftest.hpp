#pragma once
// One self-test run recorded as the daemon records it: the judge's verdict, the expectations,
// the node's baseline (regressions are warnings), the counters. The reconcile pass and
// `p2pnode selftest judge` (a recorded sequence of agent results) share it.
#include <string>
#include <vector>

#include "core/finding.hpp"
#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "engine/agent.hpp"
#include "engine/state.hpp"

namespace p2pnode::engine {

struct RecordNotes {
  std::string baseline_reset;  // why the history started over; empty when it did not
};

// run.judgement must come from judge_agent_result (or run_agent). Updates st.selftest,
// st.selftest_runs, the last success and st.baselines.
RecordNotes record_selftest(RecordedState& st, const AgentRun& run, const SelftestSpec& spec, const Inventory& inv,
                            const std::string& trigger);

// The self-test's bandwidth beside its expectations as one finding (check selftest.bandwidth):
// the range of measured / expected, the lowest cell, cells below their threshold or regressed.
// ok, or warning when any cell is below its threshold or regressed.
Finding expectation_finding(const SelftestRecord& rec);

}  // namespace p2pnode::engine
