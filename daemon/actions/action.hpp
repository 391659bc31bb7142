#pragma once
// An action closes one kind of gap. plan_*() only reads; apply_*() changes the machine and is
// idempotent: check whether the goal holds, act only if not, verify after. Applying twice plans
// nothing the second time.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::actions {

struct ApplyContext {
  const sys::SysRoot& root;
  sys::CommandRunner& runner;
  const Profile& profile;
  // Progress lines (DKMS builds take minutes): the CLI prints them, the daemon journals them.
  std::function<void(std::string_view action, std::string_view subject, std::string_view line)> log =
      [](std::string_view, std::string_view, std::string_view) {};
  bool once = false;              // boot-time run: no long waits beyond what the step needs
  bool force_reload = false;      // driver.reload reloads a module that matches (the remediation ladder)
  std::vector<std::string> only;  // apply only these action ids (empty: all)
};

class Action {
 public:
  virtual ~Action() = default;
  virtual std::string_view id() const = 0;  // "pcie.acs", "nvme.bind", "driver.dkms", …
  // Steps this action would take on this box (reads only).
  virtual std::vector<Step> plan(const Profile& profile, const Inventory& inv, const sys::SysRoot& root) const = 0;
  // Performs its steps (check → act → verify); one result per subject it looked at.
  virtual std::vector<StepResult> apply(ApplyContext& ctx, const Inventory& inv) const = 0;
};

// The running kernel's release: the probe's, else /proc/sys/kernel/osrelease.
std::string running_kernel(const sys::SysRoot& root, const Inventory& inv);

// The explicit list, in the order they run (platform fixes, then driver, then NVMe binding).
const std::vector<std::unique_ptr<Action>>& all_actions();

Plan plan_all(const Profile& profile, const Inventory& inv, const sys::SysRoot& root);
// Applies every action that has steps; re-probes between actions so each sees the box as it is.
std::vector<StepResult> apply_all(ApplyContext& ctx);

}  // namespace p2pnode::actions
