#pragma once
// Self-tests beside jobs, the pure part: whether the GPUs are busy (another process computes on
// them, or the scheduler says the node is in use), whether a self-test may run now
// (selftest.when), and whether a finished run shared the GPUs (contended: it is reported, but
// judges nothing: no thresholds, no baseline, no readiness). probe/gpu_activity reads the box.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu_users.hpp"
#include "core/profile.hpp"
#include "core/result.hpp"
#include "sys/command_runner.hpp"

namespace p2pnode::judge {

// `p2pnode-agent --processes` (api/gpu-processes.schema.json), checked: source nvml or none.
struct GpuActivity {
  std::string source, reason;
  std::vector<GpuUser> processes;
};
Result<GpuActivity> parse_gpu_activity(std::string_view text);

struct Busy {
  bool busy = false;
  std::string source;                // nvml, device files
  std::string note;                  // device files: why NVML could not answer
  std::vector<std::string> reasons;  // one line each: a process on a GPU, the scheduler
  std::vector<GpuUser> processes;    // the other processes found, ignored names left out
};
// From NVML's list (`p2pnode-agent --processes`, as it ran: preferred) or, when the agent could not
// tell (no NVML, an agent without --processes), the holders of /dev/nvidia* (every process with
// the device open, compute or not), and the scheduler. Names in `ignore` never count.
Busy judge_busy(const sys::CommandResult& agent_processes, const std::vector<GpuUser>& device_holders,
                const std::optional<SchedulerView>& scheduler, const std::vector<std::string>& ignore);

struct SelftestDecision {
  bool run = true;
  std::string reason;  // why it does not run; empty when it does
};
// forced: an operator's explicit request (POST /v1/selftest {"force": true}, the CLI's --force).
SelftestDecision decide_selftest(SelftestWhen when, bool forced, const Busy& busy);

// Who else used the GPUs while the agent ran, from its document's `contention` and each case's
// foreign_processes. contended: some process (ignored names left out) was seen.
struct Contention {
  bool contended = false;
  std::string source;                // nvml, none (the agent could not tell), absent (an agent before this)
  std::vector<GpuUser> processes;    // each pid once, with where it was first seen
  std::vector<std::string> seen_at;  // "before", "after", "case ce_write_bandwidth", …
  std::size_t cases = 0;             // cases the agent sampled after (describe says "every case")
  std::string describe() const;      // "pid 4242 (python3) on 0000:06:00.0, 0000:07:00.0; seen before, case …"
};
Contention contention_in(const nlohmann::json& agent_document, const std::vector<std::string>& ignore);

nlohmann::json to_json(const GpuUser& u);
nlohmann::json to_json(const Busy& b);
nlohmann::json to_json(const Contention& c);

}  // namespace p2pnode::judge
