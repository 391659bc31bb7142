#pragma once
// One self-test run recorded as the daemon records it: the judge's verdict, the expectations,
// the node's baseline (regressions are warnings), the counters. The reconcile pass and
// `p2pnode selftest judge` (a recorded sequence of agent results) share it.
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "engine/state.hpp"
#include "judge/contention.hpp"
#include "judge/verdict.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::engine {

struct RecordNotes {
  std::string baseline_reset;  // why the history started over; empty when it did not
  bool contended = false;      // recorded as st.selftest_contended: it judged nothing
};

// run.judgement must come from judge::judge_agent_result (or judge_agent_run). Updates st.selftest,
// st.selftest_runs, the last success and st.baselines. A run that shared the GPUs with another
// process (contention.contended) goes to st.selftest_contended instead, verdict "contended", and
// touches neither the baseline nor the last success, unless it failed in a way no job can cause
// (corrupted bytes, peer access denied): that run judges the node as any other.
// The agent's arguments for a self-test: the config's, the libgdrapi gdrcopy.library built from the
// profile's gdrcopy source where it is there (bar_copy then uses the release gdrdrv came from),
// and the profile's cases.
std::vector<std::string> selftest_agent_args(std::vector<std::string> base, const Profile& profile,
                                             const sys::SysRoot& root);

RecordNotes record_selftest(RecordedState& st, const judge::AgentRun& run, const SelftestSpec& spec,
                            const Inventory& inv, const std::string& trigger, const judge::Contention& contention = {});

}  // namespace p2pnode::engine
