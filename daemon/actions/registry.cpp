#include "actions/action.hpp"

#include <algorithm>

#include "actions/driver_install.hpp"
#include "actions/gdrcopy.hpp"
#include "actions/nvme_bind.hpp"
#include "actions/platform_fixes.hpp"
#include "probe/probe.hpp"

namespace p2pnode::actions {

std::string running_kernel(const sys::SysRoot& root, const Inventory& inv) {
  if (!inv.kernel.release.empty()) { return inv.kernel.release; }
  return root.read_attr("/proc/sys/kernel/osrelease").value_or("");
}

const std::vector<std::unique_ptr<Action>>& all_actions() {
  static const auto list = [] {
    std::vector<std::unique_ptr<Action>> v;
    v.push_back(make_acs_fix());
    v.push_back(make_rebar_resize());
    v.push_back(make_kernel_cmdline_fix());
    v.push_back(make_driver_module());
    v.push_back(make_gdrcopy_module());  // after the NVIDIA tree is placed, before the boot guard counts it
    v.push_back(make_kernel_hook());
    v.push_back(make_boot_guard());
    v.push_back(make_driver_userspace());
    v.push_back(make_driver_options());
    v.push_back(make_driver_reload());
    v.push_back(make_gdrcopy_device());   // after a reload: gdrdrv goes out with nvidia
    v.push_back(make_gdrcopy_library());  // the self-test's libgdrapi, from the same source as gdrdrv
    v.push_back(make_nvme_bind());
    return v;
  }();
  return list;
}

Plan plan_all(const Profile& profile, const Inventory& inv, const sys::SysRoot& root) {
  Plan plan;
  for (const auto& a : all_actions()) {
    auto steps = a->plan(profile, inv, root);
    plan.steps.insert(plan.steps.end(), steps.begin(), steps.end());
  }
  return plan;
}

namespace {
// The machine as files say, and on Secure Boot nodes whether the installed modules are signed (the
// boot guard counts an unsigned one as missing there).
Inventory probe_for_apply(ApplyContext& ctx) {
  Inventory inv = probe::probe_inventory(ctx.root);
  probe::probe_module_signatures_by_commands(ctx.root, ctx.runner, inv);
  probe::use_profile_signing(ctx.root, ctx.profile, inv);
  probe::use_profile_tree(ctx.root, ctx.profile, inv);
  return inv;
}
}  // namespace

std::vector<StepResult> apply_all(ApplyContext& ctx) {
  std::vector<StepResult> results;
  // Each action plans against the machine as the actions before it left it: probe again after
  // one that may have changed it (it wrote, changed or failed half-way), not after every action.
  Inventory inv = probe_for_apply(ctx);
  for (const auto& a : all_actions()) {
    if (!ctx.only.empty() && std::find(ctx.only.begin(), ctx.only.end(), a->id()) == ctx.only.end()) { continue; }
    if (a->plan(ctx.profile, inv, ctx.root).empty()) { continue; }
    auto r = a->apply(ctx, inv);
    const bool touched = std::any_of(r.begin(), r.end(), [](const StepResult& s) {
      return s.writes > 0 || s.outcome == StepOutcome::changed || s.outcome == StepOutcome::failed;
    });
    results.insert(results.end(), r.begin(), r.end());
    if (touched) { inv = probe_for_apply(ctx); }
  }
  return results;
}

}  // namespace p2pnode::actions
