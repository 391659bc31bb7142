#pragma once
// The plan is a value: steps that would close the gap between the box and its profile.
// `p2pnode plan` prints it, the API serves it, golden tests compare it.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace p2pnode {

struct Step {
  std::string action;            // the action that owns it: "pcie.acs", "nvme.bind", "driver.dkms", …
  std::string subject;           // a PCI address, "node", a DKMS module
  std::string description;       // what will be done, in words
  bool reboot_required = false;  // takes effect only after a reboot
  bool needs_operator = false;   // p2pnode cannot do it (BIOS): the description says what to do
  nlohmann::json details;        // before / wanted values
};

struct Plan {
  std::vector<Step> steps;
  bool empty() const { return steps.empty(); }
  bool reboot_required() const;
  bool needs_operator() const;
};

// What applying one step did.
enum class StepOutcome { unchanged, changed, failed, refused, reboot_required };
const char* to_string(StepOutcome o);

struct StepResult {
  std::string action;
  std::string subject;
  StepOutcome outcome = StepOutcome::unchanged;
  std::string message;       // what happened, or why it failed (with context)
  nlohmann::json before;     // observed before acting
  nlohmann::json after;      // observed after acting (the verify read)
  std::uint64_t writes = 0;  // SysRoot writes and commands that changed the machine
};

nlohmann::json to_json(const Step& s);
nlohmann::json to_json(const Plan& p);
nlohmann::json to_json(const StepResult& r);

}  // namespace p2pnode
