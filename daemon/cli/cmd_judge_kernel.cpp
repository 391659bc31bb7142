// `p2pnode judge-kernel`: the kernel apt would install next (or --release), judged before it is
// installed; the verdict is recorded for `check`, the daemon's metrics and the fleet's upgrade gate.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "core/json_text.hpp"
#include "core/module_package.hpp"
#include "lifecycle/next_kernel.hpp"
#include "probe/probe.hpp"

namespace p2pnode::cli {
namespace {
struct JudgeOptions {
  ProfileChoice choice;
  std::string release, version;  // --release/--version: this kernel instead of apt's candidate
  std::vector<std::string> modules;
  bool json = false, force = false;
};

// Exit: 0 keeps P2P (or nothing new to judge), 1 breaks it, 2 could not judge.
int run_judge(const JudgeOptions& o) {
  const sys::SysRoot root(o.choice.root);
  const Inventory inv = probe::probe_inventory(root);
  auto profile = choose_profile(o.choice, inv);
  if (!profile) { return kUsage; }
  if (!profile->driver || !profile->driver->kernel_module) {
    std::cerr << "p2pnode judge-kernel: profile " << profile->name
              << " names no driver.kernel_module: nothing to judge\n";
    return kUsage;
  }
  sys::ProcessRunner runner;
  std::string release = o.release, version = o.version;
  if (release.empty() != version.empty()) {
    std::cerr << "p2pnode judge-kernel: --release and --version go together (the headers packages' version)\n";
    return kUsage;
  }
  if (release.empty()) {
    auto next = lifecycle::find_next_kernel(root, runner);
    if (!next) {
      std::cerr << "p2pnode judge-kernel: finding apt's next kernel: " << next.error().message << "\n";
      return kUsage;
    }
    if (!*next) {
      std::cout << "no kernel metapackage (linux-image-amd64, …) is installed: apt installs no next kernel\n";
      return kOk;
    }
    if ((*next)->installed) {
      std::cout << "apt's next kernel " << (*next)->release << " (" << (*next)->meta << " " << (*next)->version
                << ") is installed already: `p2pnode check --only driver.kernels` judges it\n";
      return kOk;
    }
    release = (*next)->release;
    version = (*next)->version;
  }
  // Once per candidate: the same kernel, module and staged patches keep their verdict (--force judges again).
  if (!o.force) {
    if (auto text = root.read_text(std::string(lifecycle::kNextKernelRecord))) {
      const auto j = nlohmann::json::parse(*text, nullptr, false);
      if (auto old =
              j.is_discarded() ? Result<lifecycle::KernelVerdict>(Error{"garbled"}) : lifecycle::verdict_from_json(j);
          old && old->release == release && old->package_version == version &&
          old->module == module_package(*profile->driver).dkms_id() &&
          old->staged_sha256 == lifecycle::staged_fingerprint(root, *profile->driver)) {
        if (o.json) {
          std::cout << json_text(lifecycle::to_json(*old), 2) << "\n";
        } else {
          std::cout << old->summary << " (judged before; --force judges again)\n";
        }
        return old->keeps_p2p ? kOk : kFindings;
      }
    }
  }
  lifecycle::JudgeOptions jo;
  jo.modules = o.modules;
  auto v = lifecycle::judge_kernel(root, runner, *profile->driver, release, version, jo,
                                   [](std::string_view line) { std::cerr << "[judge-kernel] " << line << "\n"; });
  if (!v) {
    std::cerr << "p2pnode judge-kernel: " << v.error().message << "\n";
    return kUsage;
  }
  if (auto st = root.write_file_atomic(std::string(lifecycle::kNextKernelRecord),
                                       json_text(lifecycle::to_json(*v), 2) + "\n");
      !st) {
    std::cerr << "p2pnode judge-kernel: recording the verdict: " << st.error().message << "\n";
  }
  if (o.json) {
    std::cout << json_text(lifecycle::to_json(*v), 2) << "\n";
  } else {
    std::cout << v->summary << "\n";
  }
  return v->keeps_p2p ? kOk : kFindings;
}
}  // namespace

void register_judge_kernel(CLI::App& app) {
  auto o = std::make_shared<JudgeOptions>();
  auto* cmd = app.add_subcommand("judge-kernel",
                                 "Judge the kernel apt would install next before it is installed: download its headers "
                                 "into p2pnode's cache and build the profile's module against them (installs nothing)");
  add_profile_options(*cmd, o->choice);
  cmd->add_option("--release", o->release, "Judge this kernel release (6.1.0-57-amd64) instead of apt's candidate");
  cmd->add_option("--version", o->version, "The Debian version of its headers packages (6.1.200-1)");
  cmd->add_option("--modules", o->modules, "Build only these modules of the tree (nvidia, nvidia-uvm, …); default: all")
      ->delimiter(',');
  cmd->add_flag("--force", o->force, "Judge again although this kernel, module and staged patches were judged");
  cmd->add_flag("--json", o->json, "Print the verdict as JSON (also recorded in /var/lib/p2pnode/next-kernel.json)");
  cmd->callback([o] { throw CLI::RuntimeError(run_judge(*o)); });
}

}  // namespace p2pnode::cli
