#pragma once
// One reconcile pass: discover → check → plan → apply → verify → self-test → decide. It changes
// the box only through actions::apply_all and runs the agent only through the agent runner; the
// result is written into a RecordedState the caller then stores and serves.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/config.hpp"
#include "engine/log.hpp"
#include "engine/state.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::engine {

struct PassContext {
  const sys::SysRoot& root;
  sys::CommandRunner& action_runner;  // dkms, modprobe, update-grub
  sys::CommandRunner& agent_runner;   // p2pnode-agent
  const DaemonConfig& config;
  LogFn log;
  std::string trigger;          // start, reload, api, schedule, device, selftest
  bool want_selftest = false;   // run the agent in this pass (when the platform allows it)
  bool force_selftest = false;  // an operator asked for it with force: run even on busy GPUs
  const std::atomic<bool>* cancel =
      nullptr;  // true: the daemon is stopping or the pass is overdue; commands are killed
  // The health pass's health.memory errors (uncorrected ECC rose, a remap failed): a self-test that
  // checked integrity says its bytes were compared on memory that cannot be trusted.
  std::vector<std::string> untrusted_memory;
  // The health pass's lost P2P paths (views.hpp lost_p2p_paths), whether it watches and when it last
  // read the box: the remediation ladder's inputs.
  std::vector<std::string> lost_p2p;
  bool health_watching = false;
  std::int64_t health_read_unix = 0;
  // Stores the state mid-pass (the remediation ladder, before a rung runs); nullptr: not stored.
  std::function<void(const RecordedState&)> persist;
};

// Updates state in place (counters and the last self-test carry over from the previous pass).
void reconcile_pass(const PassContext& ctx, RecordedState& state);

// The self-test schedule that applies: the config's, else the profile's, else none.
std::optional<std::chrono::nanoseconds> selftest_interval(const DaemonConfig& c, const RecordedState& s);

}  // namespace p2pnode::engine
