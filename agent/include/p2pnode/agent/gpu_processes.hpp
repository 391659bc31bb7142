// Who else is using the GPUs: the compute processes NVML lists per GPU (libnvidia-ml.so.1 opened
// at run time, as nvml.cpp does), without a CUDA context of our own. The daemon asks before a
// scheduled self-test (`p2pnode-agent --processes`) so a job is never disturbed, and the self-test
// samples it before, between and after its cases so a run made beside a job is marked, not
// blamed on the hardware.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace p2pnode::agent {

struct GpuProcess {
  std::string gpu;  // normalized PCI bus id, "0000:3b:00.0"
  unsigned pid = 0;
  std::string name;                     // NVML's process name, else /proc/<pid>/comm, else empty
  std::uint64_t used_memory_bytes = 0;  // 0 when NVML cannot tell
};

struct GpuLoad {
  std::string gpu;
  std::optional<unsigned> utilization_percent;  // NVML's last sample period (1/6 s to 1 s)
};

// One NVML session for a run: opened once, sampled many times (a sample costs one NVML call per
// GPU, about a millisecond). Never throws: without NVML, available() is false and reason() says why.
class ProcessWatch {
 public:
  // bus_ids: the GPUs to watch (normalized); empty: every GPU NVML sees. exclude_pid: our own.
  ProcessWatch(std::vector<std::string> bus_ids, unsigned exclude_pid, const char* library = "libnvidia-ml.so.1");
  ~ProcessWatch();
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;

  bool available() const;
  const std::string& reason() const;
  const std::vector<std::string>& gpus() const;
  // The compute processes on the watched GPUs, other than exclude_pid, in GPU then pid order.
  std::vector<GpuProcess> sample();
  std::vector<GpuLoad> load();
  // The device memory process `pid` holds on each watched GPU, in gpus() order, as NVML counts it;
  // nullopt for a GPU where NVML lists no such process (or cannot tell). Empty without NVML.
  std::vector<std::optional<std::uint64_t>> own_memory(unsigned pid);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

nlohmann::json to_json(const GpuProcess& p);
nlohmann::json to_json(const std::vector<GpuProcess>& ps);

// The `--processes` document (schema api/gpu-processes.schema.json).
nlohmann::json processes_document(ProcessWatch& watch, const std::string& agent_version);

}  // namespace p2pnode::agent
