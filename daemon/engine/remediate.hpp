#pragma once
// The remediation ladder on the box (remediation/ladder.hpp decides): what the pass saw (the health
// pass's lost P2P paths, the last self-test, who uses the GPUs), the rung taken with the record
// persisted before it runs, the self-test after it, and the climb while that self-test still fails.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "engine/reconcile.hpp"
#include "engine/state.hpp"

namespace p2pnode::engine {

struct LadderHooks {
  std::function<Inventory()> rediscover;  // the box after a rung (a reset or a reload changes it)
  std::function<void(const Inventory&)>
      selftest;  // a self-test now, recorded in the state (it may be skipped: busy GPUs)
};

// Why the node is not ready because of the ladder: (state, reason) pairs the pass raises.
using LadderRaises = std::vector<std::pair<NodeState, std::string>>;

// One pass of the ladder for a profile with a remediation section. Updates st.remediation and its
// counters; runs at most every rung once.
LadderRaises run_ladder(const PassContext& ctx, const Profile& profile, Inventory& inv, RecordedState& st,
                        const LadderHooks& hooks);

// Self-tests judged so far (skipped and contended runs judge nothing): the ladder's clock.
std::uint64_t judged_selftests(const RecordedState& st);

// The command that resets one GPU (nvidia-smi, by PCI address).
std::vector<std::string> gpu_reset_argv(const std::string& bdf);

}  // namespace p2pnode::engine
