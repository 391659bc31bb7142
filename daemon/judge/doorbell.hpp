#pragma once
// The NVMe doorbell self-test as the daemon runs it: for every profile drive bound to
// vfio-pci that names a pair_gpu, `p2pnode-agent --cases nvme_doorbell --writer both --nvme …`
// (the GPU writes the admin SQ tail doorbell, then the host does, so a failure says which side is
// broken), with the serial and model p2pnode recorded before the bind. The result is kept per
// drive, GPU and writer.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.hpp"
#include "judge/verdict.hpp"
#include "nvme/select.hpp"

namespace p2pnode::judge {

struct DoorbellTarget {
  std::string bdf, serial, model, pair_gpu;
};

// The drives to test: named by the profile with driver vfio-pci and a pair_gpu, found on the box
// (serial, model or address, as nvme.bind selects them) and on vfio-pci now. `skipped` says why a
// named drive with a pair_gpu is not tested (not on vfio-pci yet, serial unknown, a comma in it).
struct DoorbellTargets {
  std::vector<DoorbellTarget> targets;
  std::vector<std::string> skipped;
};
DoorbellTargets doorbell_targets(const Profile& p, const std::vector<nvme::ControllerIdentity>& ids);

// The agent's arguments for them.
std::vector<std::string> doorbell_args(const std::vector<DoorbellTarget>& t);

// One line per drive, GPU and writer.
struct DoorbellResult {
  std::string nvme, gpu, writer, status, reason, serial, model;
  bool ok = false;
  std::optional<double> completion_us;
};
struct DoorbellRecord {
  std::string verdict;  // passed, failed, waived (nothing could be tested), error (the agent)
  std::vector<std::string> reasons;
  std::vector<DoorbellResult> results;
  std::string trigger;
  std::int64_t started_unix = 0;
  double duration_s = 0;
};
// The verdict from the agent's run (a hung, crashed or lying agent is an error).
DoorbellRecord judge_doorbell(const AgentRun& run, const std::vector<DoorbellTarget>& targets);

nlohmann::json to_json(const DoorbellRecord& r);
Result<DoorbellRecord> doorbell_record_from_json(const nlohmann::json& j);

// "0000:0b:00.0 <- GPU 0000:0a:00.0: GPU writer ok, host writer ok (Identify P2PVM-A in 240 us)"
std::vector<std::string> doorbell_lines(const DoorbellRecord& r);

}  // namespace p2pnode::judge
