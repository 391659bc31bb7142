#include <iostream>
#include <memory>

#include "actions/action.hpp"
#include "cli/commands.hpp"
#include "core/json_text.hpp"
#include "probe/probe.hpp"
#include "render/report.hpp"

namespace p2pnode::cli {

namespace {
struct PlanOptions {
  ProfileChoice choice;
  bool json = false;
  bool once = false;
  std::vector<std::string> only;  // apply: action ids; empty = every action
};

int run_plan(const PlanOptions& o) {
  const sys::SysRoot root(o.choice.root);
  Inventory inv = probe::probe_inventory(root);
  sys::ProcessRunner runner;  // modinfo, on Secure Boot nodes only (read-only)
  probe::probe_module_signatures_by_commands(root, runner, inv);
  auto profile = choose_profile(o.choice, inv);
  if (!profile) { return kUsage; }
  probe::use_profile_signing(root, *profile, inv);
  probe::use_profile_tree(root, *profile, inv);
  const Plan plan = actions::plan_all(*profile, inv, root);
  if (o.json) {
    nlohmann::json j = to_json(plan);
    j["schema_version"] = 1;
    j["profile"] = profile->name;
    std::cout << json_text(j, 2) << "\n";
    return kOk;
  }
  std::cout << "p2pnode plan: profile " << profile->name << ", " << plan.steps.size() << " step(s)\n";
  for (const auto& s : plan.steps) {
    std::cout << "  " << s.action << "  " << s.subject << "  " << s.description;
    if (s.needs_operator) {
      std::cout << "  [needs a person]";
    } else if (s.reboot_required) {
      std::cout << "  [reboot required]";
    }
    std::cout << "\n";
  }
  if (plan.empty()) { std::cout << "  nothing to do: the box matches its profile as far as p2pnode can fix it\n"; }
  return kOk;
}

int run_apply(const PlanOptions& o) {
  const sys::SysRoot root(o.choice.root);
  const Inventory inv = probe::probe_inventory(root);
  auto profile = choose_profile(o.choice, inv);
  if (!profile) { return kUsage; }
  sys::ProcessRunner runner;
  actions::ApplyContext ctx{root, runner, *profile};
  ctx.once = o.once;
  ctx.only = o.only;
  // Progress (a DKMS build takes minutes) goes to stderr, with --json too: stdout stays the document.
  ctx.log = [](std::string_view action, std::string_view subject, std::string_view line) {
    std::cerr << "[" << action << " " << subject << "] " << line << "\n";
  };
  const auto results = actions::apply_all(ctx);
  std::uint64_t writes = 0;
  bool failed = false, reboot = false;
  for (const auto& r : results) {
    writes += r.writes;
    failed |= r.outcome == StepOutcome::failed || r.outcome == StepOutcome::refused;
    reboot |= r.outcome == StepOutcome::reboot_required;
  }
  if (o.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : results) { list.push_back(to_json(r)); }
    std::cout << json_text(nlohmann::json{{"schema_version", 1},
                                          {"profile", profile->name},
                                          {"steps", list},
                                          {"writes", writes},
                                          {"changed", writes > 0},
                                          {"reboot_required", reboot},
                                          {"failed", failed}},
                           2)
              << "\n";
  } else {
    std::cout << "p2pnode apply: profile " << profile->name << "\n";
    for (const auto& r : results) {
      std::cout << "  " << to_string(r.outcome) << "  " << r.action << "  " << r.subject << "  " << r.message << "\n";
    }
    if (writes == 0 && !failed) {
      std::cout << "  nothing changed: the box already matches what p2pnode can fix\n";
    } else {
      std::cout << "  " << writes << " write(s)" << (reboot ? "; reboot required" : "") << "\n";
    }
  }
  return failed ? kFindings : kOk;
}
}  // namespace

void register_plan_apply(CLI::App& app) {
  auto popts = std::make_shared<PlanOptions>();
  auto* plan = app.add_subcommand("plan", "Show the steps apply would take (reads only)");
  add_profile_options(*plan, popts->choice);
  plan->add_flag("--json", popts->json, "Print the plan as JSON");
  plan->callback([popts] { throw CLI::RuntimeError(run_plan(*popts)); });

  auto aopts = std::make_shared<PlanOptions>();
  auto* apply = app.add_subcommand("apply", "Change the box to match its profile (check, act, verify)");
  add_profile_options(*apply, aopts->choice);
  apply->add_flag("--json", aopts->json, "Print each step with before, after and whether it wrote");
  apply->add_flag("--once", aopts->once, "Boot-time run from a oneshot unit: apply and exit");
  apply->add_option("--only", aopts->only,
                    "Apply only this action (repeatable), e.g. driver.module (the kernel hook's)");
  apply->callback([aopts] { throw CLI::RuntimeError(run_apply(*aopts)); });
}

}  // namespace p2pnode::cli
