#include "probe/agent_run.hpp"

#include <ctime>

namespace p2pnode::probe {

AgentProcess run_agent(sys::CommandRunner& runner, const std::string& path, const std::vector<std::string>& args,
                       std::chrono::nanoseconds time_limit, std::size_t max_output_bytes,
                       const std::atomic<bool>* cancel) {
  AgentProcess run;
  run.started_unix = static_cast<std::int64_t>(std::time(nullptr));
  sys::Command cmd;
  cmd.argv = {path, "--json"};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(time_limit);
  cmd.max_output_bytes = max_output_bytes;
  cmd.cancel = cancel;
  const auto t0 = std::chrono::steady_clock::now();
  run.process = runner.run(cmd);
  run.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

}  // namespace p2pnode::probe
