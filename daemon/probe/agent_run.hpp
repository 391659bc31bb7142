#pragma once
// Runs the self-test agent (`<path> --json <args…>`) with a time limit and a bounded output; the
// judge (judge/verdict.hpp) decides what its exit and document mean.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "sys/command_runner.hpp"

namespace p2pnode::probe {

struct AgentProcess {
  sys::CommandResult process;
  std::int64_t started_unix = 0;
  double duration_s = 0;
};
// Output beyond max_output_bytes is cut (and flagged). cancel: when it turns true (the daemon is stopping) the agent is
// killed and process.cancelled set.
AgentProcess run_agent(sys::CommandRunner& runner, const std::string& path, const std::vector<std::string>& args,
                       std::chrono::nanoseconds time_limit, std::size_t max_output_bytes,
                       const std::atomic<bool>* cancel = nullptr);

}  // namespace p2pnode::probe
