#pragma once
// The judge: the verdict on one self-test, from the agent's document, the inventory and the
// profile. Pure: it runs nothing and reads nothing (the engine runs the agent and records).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "judge/agent_result.hpp"
#include "sys/command_runner.hpp"

namespace p2pnode::judge {

// The verdict on one self-test, against the profile's thresholds.
struct Judgement {
  std::string verdict = "passed";  // passed, below_threshold, failed, error
  std::vector<std::string> reasons;
  // What does not change the verdict or the node's readiness but a reader should know: NVML's P2P
  // status disagreeing with what CUDA allowed (the self-test's word decides).
  std::vector<std::string> notes;
  // Per bandwidth cell: measured, ceiling, expected, ratio, threshold and where it came from
  // (judge/expectations to_json plus threshold_gbps, threshold_source, below_threshold).
  nlohmann::json expectations = nlohmann::json::array();
  // A failure no other job can cause: corrupted bytes, peer access denied. It counts even in a
  // run that shared the GPUs (a contended run's other verdicts judge nothing).
  bool load_independent_failure = false;
};
// Bandwidth thresholds are per pair class (NV<n>, then NV; PIX, PXB, PHB, NODE, SYS; then "any"):
// the class from the document's interconnect (NVLink) merged with the inventory's PCI paths.
// Where the profile names none for a cell, the threshold is spec.min_fraction_of_expected of the
// cell's expected figure (pci/expectation).
Judgement judge_agent_result(const AgentResult& r, const SelftestSpec& spec, const Inventory& inv);

struct AgentRun {
  Judgement judgement;
  std::optional<AgentResult> result;
  sys::CommandResult process;
  std::int64_t started_unix = 0;
  double duration_s = 0;
};
// The verdict on a finished agent process (probe/agent_run.hpp ran it): a hung, crashed, silent,
// oversized or lying agent is an error; otherwise the judge's verdict on its document.
AgentRun judge_agent_run(sys::CommandResult process, std::int64_t started_unix, double duration_s,
                         const std::string& path, std::chrono::nanoseconds time_limit, const SelftestSpec& spec,
                         const Inventory& inv);

}  // namespace p2pnode::judge
