#pragma once
// Who else uses the GPUs, as plain data: read by probe/gpu_activity, judged by judge/contention.
#include <cstdint>
#include <string>

namespace p2pnode {

struct GpuUser {
  std::string gpu;  // PCI address; empty when only a device file says so (the fallback)
  int pid = 0;
  std::string name;
  std::uint64_t used_memory_bytes = 0;
  std::string seen;  // nvml, or the device files it holds ("/dev/nvidia0 /dev/nvidiactl")
};

// The scheduler's answer (selftest.scheduler). known=false: it could not be asked (the command
// failed to run or said neither idle nor busy): the node counts as busy, since a job may be there.
struct SchedulerView {
  bool known = true, busy = false;
  std::string reason;
};

}  // namespace p2pnode
