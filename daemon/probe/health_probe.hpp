#pragma once
// The health pass's reads, all passive (sysfs attributes, the kernel log, NVML through the agent):
// no config-space access, no GPU work.
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "health/kernel_log.hpp"
#include "health/paths.hpp"
#include "health/sample.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::probe {

// AER statistics (aer_dev_*) and link speed/width of every device in paths.devices.
std::vector<health::DeviceReading> probe_device_health(const sys::SysRoot& root, const health::PathIndex& paths);

// The kernel log through /dev/kmsg (inside the SysRoot), kept open between passes so each pass
// reads only what is new; a regular file (a recording) is read whole each pass, the monitor drops
// what it has seen by sequence number. Only Xid records are kept.
class KmsgReader {
 public:
  explicit KmsgReader(const sys::SysRoot& root, std::string path = "/dev/kmsg") : root_(root), path_(std::move(path)) {}
  ~KmsgReader();
  KmsgReader(const KmsgReader&) = delete;
  KmsgReader& operator=(const KmsgReader&) = delete;
  health::XidReading read_new();

 private:
  const sys::SysRoot& root_;
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;
  health::KernelLogParser kernel_log_;  // a three-line report may span two reads
};

// Runs `<agent> --health --json` (NVML only: no CUDA context) with a time limit and decodes it.
// Never fails: what went wrong is in AgentReading::skipped.
health::AgentReading probe_nvlink(sys::CommandRunner& runner, const std::string& agent_host_path,
                                  std::chrono::milliseconds time_limit, const std::atomic<bool>* cancel = nullptr);

}  // namespace p2pnode::probe
