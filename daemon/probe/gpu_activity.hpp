#pragma once
// Reads who else uses the GPUs, without touching them: `p2pnode-agent --processes` (NVML, no
// CUDA context), the holders of /dev/nvidia* from /proc (the fallback without NVML), and the
// scheduler the profile names. judge/contention decides what it means.
#include <optional>
#include <string>
#include <vector>

#include "core/gpu_users.hpp"
#include "core/profile.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::probe {

struct GpuActivityReading {
  sys::CommandResult agent;             // `<agent> --processes`, as it ran
  std::vector<GpuUser> device_holders;  // every process with /dev/nvidia* open
  std::optional<SchedulerView> scheduler;
};

// agent_runner runs the agent (never refused, also under --root); host_runner the scheduler's
// command (the daemon's action runner: refused under --root).
GpuActivityReading probe_gpu_activity(const sys::SysRoot& root, sys::CommandRunner& agent_runner,
                                      sys::CommandRunner& host_runner, const std::string& agent_path,
                                      const std::optional<SchedulerSpec>& scheduler);

// The scheduler alone: the command's exit status (0 idle, 1 busy, its first output line why) and
// the busy file (present: busy, its first line why).
SchedulerView probe_scheduler(const sys::SysRoot& root, sys::CommandRunner& runner, const SchedulerSpec& spec);

}  // namespace p2pnode::probe
