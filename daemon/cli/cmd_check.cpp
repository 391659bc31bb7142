#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "checks/check.hpp"
#include "cli/commands.hpp"
#include "core/json_text.hpp"
#include "judge/interconnect.hpp"
#include "probe/probe.hpp"
#include "render/report.hpp"
#include "sys/command_runner.hpp"

namespace p2pnode::cli {

namespace {
struct CheckOptions {
  ProfileChoice choice;
  bool json = false;
  bool verbose = false;           // one row per finding, not per group of identical ones
  std::vector<std::string> only;  // check ids; empty = every check
  std::string agent_result;       // --agent-result: the driver's view of the pairs (NVLink)
  bool list = false;              // --list: every check id and what it checks; nothing is read
};

// `check --list`: the ids --only takes, each with what it checks (docs/checks.md is tested against it).
int list_checks(bool json) {
  nlohmann::json out = nlohmann::json::array();
  std::size_t width = 0;
  for (const auto& c : checks::all_checks()) { width = std::max(width, c.id.size()); }
  for (const auto& c : checks::all_checks()) {
    if (json) {
      out.push_back({{"id", c.id}, {"description", c.description}});
    } else {
      std::cout << c.id << std::string(width + 2 - c.id.size(), ' ') << c.description << "\n";
    }
  }
  if (json) { std::cout << json_text(out, 2) << "\n"; }
  return kOk;
}

int run_check(const CheckOptions& o) {
  if (o.list) { return list_checks(o.json); }
  const sys::SysRoot root(o.choice.root);
  Inventory inv = probe::probe_inventory(root);
  // On the real root, as the daemon does: ldconfig -p, then nvidia-smi, when no libcuda file
  // answered (a recorded tree runs no programs of this host).
  if (std::error_code ec; std::filesystem::weakly_canonical(o.choice.root, ec) == "/") {
    sys::ProcessRunner runner;
    probe::probe_userspace_by_commands(root, runner, inv.nvidia);
    probe::probe_gpu_memory_by_commands(runner, inv);               // each GPU's own VRAM, where a driver runs
    probe::probe_module_signatures_by_commands(root, runner, inv);  // Secure Boot nodes only
  }
  if (!o.agent_result.empty()) {
    std::ifstream in(o.agent_result, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const auto doc = nlohmann::json::parse(text.str(), nullptr, false);
    if (!in || doc.is_discarded()) {
      std::cerr << "p2pnode check: --agent-result " << o.agent_result << ": not a readable JSON document\n";
      return kUsage;
    }
    if (auto st = judge::merge_agent_interconnect(inv, doc); !st) {
      std::cerr << "p2pnode check: --agent-result " << o.agent_result << ": " << st.error().message << "\n";
      return kUsage;
    }
  }
  auto profile = choose_profile(o.choice, inv);
  if (!profile) { return kUsage; }
  probe::use_profile_signing(root, *profile, inv);
  probe::use_profile_tree(root, *profile, inv);
  std::vector<Finding> findings;
  std::vector<std::string> not_applicable;  // --only checks that found nothing to judge here
  if (o.only.empty()) {
    findings = checks::run_all_checks(*profile, inv);
  } else {
    for (const auto& id : o.only) {
      const auto& all = checks::all_checks();
      const auto it = std::find_if(all.begin(), all.end(), [&](const checks::CheckDef& c) { return c.id == id; });
      if (it == all.end()) {
        std::cerr << "p2pnode check: --only " << id << ": no such check (p2pnode check --list lists the ids)\n";
        return kUsage;
      }
      auto f = it->run(*profile, inv);
      if (f.empty()) { not_applicable.push_back(id); }
      findings.insert(findings.end(), f.begin(), f.end());
    }
  }

  if (o.json) {
    std::cout << json_text(render::check_report_json(inv, profile->name, findings), 2) << "\n";
  } else {
    std::cout << render::render_check_table(inv, profile->name, findings, o.verbose);
  }
  if (!o.json) {
    for (const auto& id : not_applicable) {
      std::cout << id << ": not applicable here (this box and profile " << profile->name
                << " give it nothing to judge)\n";
    }
  }
  return worst(findings) == Severity::error ? kFindings : kOk;
}
}  // namespace

void register_check(CLI::App& app) {
  auto opts = std::make_shared<CheckOptions>();
  auto* cmd = app.add_subcommand("check", "Check this box against its profile (reads only)");
  add_profile_options(*cmd, opts->choice);
  cmd->add_flag("--json", opts->json, "Print the findings as JSON (api/check-report.schema.json)");
  cmd->add_flag("-v,--verbose", opts->verbose,
                "One row per finding (the table groups subjects with identical results)");
  cmd->add_option("--only", opts->only, "Run only this check (repeatable), e.g. driver.kernels (--list lists them)");
  cmd->add_flag("--list", opts->list, "List every check id and what it checks, and exit (reads nothing)");
  cmd->add_option("--agent-result", opts->agent_result,
                  "A p2pnode-agent JSON document of this box: its NVLink pairs show as NV<n> (sysfs sees only PCIe)");
  cmd->callback([opts] { throw CLI::RuntimeError(run_check(*opts)); });
}

}  // namespace p2pnode::cli
