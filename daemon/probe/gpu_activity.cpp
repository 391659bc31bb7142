#include "probe/gpu_activity.hpp"

#include <chrono>

#include "lifecycle/reload.hpp"

namespace p2pnode::probe {

namespace {
std::string first_line(const std::string& s) {
  std::string l = s.substr(0, s.find('\n'));
  while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) { l.pop_back(); }
  return l.size() > 200 ? l.substr(0, 200) : l;
}
}  // namespace

SchedulerView probe_scheduler(const sys::SysRoot& root, sys::CommandRunner& runner, const SchedulerSpec& spec) {
  SchedulerView v;
  // Only its presence counts: the file is never opened, so whatever it holds (or names, as a link)
  // never reaches a reason the API serves, and a FIFO there cannot block the pass.
  if (spec.busy_file && root.exists(*spec.busy_file)) {
    v.busy = true;
    v.reason = *spec.busy_file + " exists";
    return v;
  }
  if (spec.command.empty()) { return v; }
  sys::Command cmd;
  cmd.argv = spec.command;
  cmd.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(spec.timeout);
  cmd.max_output_bytes = 64 * 1024;
  const auto r = runner.run(cmd);
  const std::string said = first_line(r.out.empty() ? r.err : r.out);
  if (r.exited && (r.exit_code == 0 || r.exit_code == 1)) {
    v.busy = r.exit_code == 1;
    v.reason = cmd.display() + " exited " + std::to_string(r.exit_code) + (said.empty() ? "" : ": " + said);
  } else {
    v.known = false;
    v.reason =
        cmd.display() + " " + r.describe() + (said.empty() ? "" : ": " + said) + " (expected exit 0 idle or 1 busy)";
  }
  return v;
}

GpuActivityReading probe_gpu_activity(const sys::SysRoot& root, sys::CommandRunner& agent_runner,
                                      sys::CommandRunner& host_runner, const std::string& agent_path,
                                      const std::optional<SchedulerSpec>& scheduler) {
  GpuActivityReading r;
  sys::Command cmd;
  cmd.argv = {agent_path, "--processes"};
  cmd.timeout = std::chrono::seconds(20);  // NVML's first init on a cold driver takes seconds
  cmd.max_output_bytes = 1 << 20;
  r.agent = agent_runner.run(cmd);
  for (const auto& h : lifecycle::find_holders(root)) {
    GpuUser u;
    u.pid = h.pid;
    u.name = h.comm;
    for (const auto& f : h.files) { u.seen += (u.seen.empty() ? "" : " ") + f; }
    r.device_holders.push_back(std::move(u));
  }
  if (scheduler) { r.scheduler = probe_scheduler(root, host_runner, *scheduler); }
  return r;
}

}  // namespace p2pnode::probe
