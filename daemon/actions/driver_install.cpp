#include "actions/driver_install.hpp"
#include "actions/signing_key.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/grammar.hpp"
#include "core/json_text.hpp"
#include "lifecycle/artifact.hpp"
#include "lifecycle/boot.hpp"
#include "lifecycle/module_install.hpp"
#include "lifecycle/reload.hpp"
#include "lifecycle/verify.hpp"
#include "nvidia/forecast.hpp"
#include "nvidia/gpu_arch.hpp"
#include "secureboot/verdict.hpp"

namespace p2pnode::actions {
namespace {
using json = nlohmann::json;

// The nvidia.ko copies that DKMS did not install and that would load instead of its build: those in
// updates/ (where DKMS installs and depmod looks first) and the one modules.dep resolves. Moved, never
// deleted, to /var/lib/p2pnode/shadowed/<kernel>/<path under /lib/modules/<kernel>>; DKMS's install
// runs depmod after. Returns "from -> to" per file, or the error that stopped it.
Result<std::vector<std::string>> move_shadowing_modules(const sys::SysRoot& root, const Inventory& inv) {
  std::vector<std::string> moved;
  for (const auto& k : inv.kernels.kernels) {
    for (const auto& path : k.foreign_nvidia) {
      if (path.find("/updates/") == std::string::npos && path != k.modprobe_nvidia) { continue; }
      const std::string base = sys::join("/lib/modules", k.release) + "/";
      if (path.rfind(base, 0) != 0 || !root.exists(path)) { continue; }
      const std::string to = sys::join("/var/lib/p2pnode/shadowed", k.release, path.substr(base.size()));
      if (auto st = root.make_dirs(to.substr(0, to.rfind('/'))); !st) {
        return Error{"moving aside " + path + ": " + st.error().message};
      }
      if (auto st = root.move(path, to); !st) { return Error{"moving aside " + path + ": " + st.error().message}; }
      moved.push_back(path + " -> " + to);
    }
  }
  return moved;
}

sys::CommandResult run_logged(ApplyContext& ctx, std::string_view action, const std::string& subject,
                              std::vector<std::string> argv, std::chrono::seconds timeout) {
  sys::Command c;
  c.argv = std::move(argv);
  c.timeout = timeout;
  const auto start = std::chrono::steady_clock::now();
  c.on_line = [&](std::string_view line, bool) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char b[24];
    std::snprintf(b, sizeof b, "+%.1f s ", s);
    if (!line.empty()) { ctx.log(action, subject, b + std::string(line)); }
  };
  ctx.log(action, subject, c.display());
  return ctx.runner.run(c);
}

// ---------------------------------------------------------------------------------------------
// driver.module: the patched kernel module through DKMS.

class DriverModule final : public Action {
 public:
  std::string_view id() const override { return "driver.module"; }

  std::vector<Step> plan(const Profile& p, const Inventory& inv, const sys::SysRoot& root) const override {
    std::vector<Step> steps;
    if (!p.driver || !p.driver->kernel_module) { return steps; }
    const auto gaps = lifecycle::module_gaps(root, *p.driver);
    if (gaps.empty()) { return steps; }
    const auto t = lifecycle::module_target(*p.driver);
    if (const auto not_driven = nvidia::gpus_not_driven(inv, p.driver->version); !not_driven.empty()) {
      steps.push_back({"driver.module",
                       t.dkms_id(),
                       "refused: " + not_driven.front() +
                           "; name a driver of that branch in the profile (nothing is "
                           "downloaded or built)",
                       false,
                       true,
                       {{"gaps", gaps}, {"not_driven", not_driven}}});
      return steps;
    }
    // A P2P tree whose branch does not bring P2P to these cards (the branch table): refused likewise.
    if (const auto without = nvidia::gpus_without_p2p(inv, p.driver->version); !without.empty()) {
      steps.push_back({"driver.module",
                       t.dkms_id(),
                       "refused: " + without.front() + " (nothing is downloaded or built)",
                       false,
                       true,
                       {{"gaps", gaps}, {"without_p2p", without}}});
      return steps;
    }
    // Secure Boot on and DKMS's key untrusted: the kernel would refuse whatever is built.
    if (const auto why = secureboot::build_refusal(inv.secure_boot)) {
      steps.push_back({"driver.module",
                       t.dkms_id(),
                       "refused: " + *why + " (nothing is downloaded or built)",
                       false,
                       true,
                       {{"gaps", gaps},
                        {"secure_boot", secureboot::to_string(secureboot::decide_signing(inv.secure_boot).trust)}}});
      return steps;
    }
    // A known breakage: refused outright where the staged source confirms it; forecast from the
    // version alone, apply reads the source after staging it and refuses then, before any build.
    const bool source_read = nvidia::staged_source_tests(inv, *p.driver) != nullptr;
    const auto stops = nvidia::build_stops(inv, *p.driver);
    if (!stops.empty() && source_read) {
      steps.push_back({"driver.module",
                       t.dkms_id(),
                       "refused: " + stops.front() + " (nothing is downloaded or built)",
                       false,
                       true,
                       {{"gaps", gaps}, {"build_stops", stops}}});
      return steps;
    }
    const auto kernels = lifecycle::kernels_with_headers(root);
    if (kernels.empty()) {
      const std::string k = running_kernel(root, inv);
      steps.push_back({"driver.module",
                       t.dkms_id(),
                       "no kernel in /lib/modules has headers: install linux-headers-" +
                           (k.empty() ? "<running kernel>" : k) + ", then apply builds " + t.dkms_id() +
                           " through DKMS",
                       false,
                       true,
                       {{"gaps", gaps}, {"running_kernel", k}}});
      return steps;
    }
    Step s{
        "driver.module",
        t.dkms_id(),
        "verify the source's sha256, place it in " + t.src_dir +
            " with a generated dkms.conf, then dkms add, "
            "build and install for " +
            json_text(json(kernels)) +
            (p.driver->kernel_module->signing
                 ? "; DKMS signs with the profile's key " + p.driver->kernel_module->signing->key + " (" +
                       std::string(kSigningDropIn) + ")"
                 : std::string()) +
            (stops.empty() ? std::string()
                           : "; forecast from the version: " + stops.front() +
                                 " (refused after staging, before any build, unless the source carries its own fix)"),
        false,
        false,
        {{"gaps", gaps}, {"kernels", kernels}, {"running_kernel", running_kernel(root, inv)}}};
    if (!stops.empty()) { s.details["build_stops"] = stops; }
    steps.push_back(s);
    return steps;
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory& inv) const override {
    if (!ctx.profile.driver || !ctx.profile.driver->kernel_module) { return {}; }
    const auto t = lifecycle::module_target(*ctx.profile.driver);
    const std::string subject = t.dkms_id();
    if (auto r = refuse_before_download(ctx, inv, subject)) { return {*r}; }
    if (auto r = point_dkms_at_profile_key(ctx, subject)) { return {*r}; }
    // The .run installer's copies would load instead of what DKMS builds: moved aside (backed up) first.
    const auto moved = move_shadowing_modules(ctx.root, inv);
    if (!moved) {
      StepResult r{
          "driver.module", subject, StepOutcome::failed, "before any build: " + moved.error().message, json::object(),
          json::object(),  0};
      ctx.log("driver.module", subject, r.message);
      return {r};
    }
    for (const auto& m : *moved) {
      ctx.log("driver.module", subject, "moved aside a module DKMS did not install: " + m);
    }
    const auto preflight = [&](const std::map<std::string, bool>& source_tests) {
      return nvidia::build_stops(inv, *ctx.profile.driver, &source_tests);
    };
    auto r = lifecycle::install_module(
        ctx.root, ctx.runner, *ctx.profile.driver, running_kernel(ctx.root, inv),
        [&](std::string_view line) { ctx.log("driver.module", subject, line); }, preflight);
    if (!moved->empty()) { r.after["moved_aside"] = *moved; }
    ctx.log("driver.module", subject, std::string(to_string(r.outcome)) + ": " + r.message);
    return {r};
  }

 private:
  // What refuses the module before any download, logged: GPUs this branch cannot drive or give P2P,
  // Secure Boot without a trusted key, a known breakage the staged source confirms.
  static std::optional<StepResult> refuse_before_download(ApplyContext& ctx, const Inventory& inv,
                                                          const std::string& subject) {
    const auto refused = [&](std::string message, json before) {
      StepResult r{"driver.module", subject, StepOutcome::refused, std::move(message), std::move(before),
                   json::object(),  0};
      ctx.log("driver.module", subject, "refused: " + r.message);
      return r;
    };
    // Before any download: a branch that cannot drive these GPUs would build for minutes, then fail at load.
    if (const auto not_driven = nvidia::gpus_not_driven(inv, ctx.profile.driver->version); !not_driven.empty()) {
      return refused("refused before any download or build: " + not_driven.front(), {{"not_driven", not_driven}});
    }
    if (const auto without = nvidia::gpus_without_p2p(inv, ctx.profile.driver->version); !without.empty()) {
      return refused("refused before any download or build: " + without.front(), {{"without_p2p", without}});
    }
    if (const auto why = secureboot::build_refusal(inv.secure_boot)) {
      std::string message = secure_boot_refusal(ctx, inv, subject, *why);
      return refused(std::move(message),
                     {{"secure_boot", secureboot::to_string(secureboot::decide_signing(inv.secure_boot).trust)}});
    }
    // A known breakage the profile does not fix would stop the build after minutes: refused before any
    // download where the staged source confirms it, else after staging (the source read), before any build.
    if (nvidia::staged_source_tests(inv, *ctx.profile.driver)) {
      if (const auto stops = nvidia::build_stops(inv, *ctx.profile.driver); !stops.empty()) {
        return refused("refused before any download or build: " + stops.front(), {{"build_stops", stops}});
      }
    }
    return std::nullopt;
  }

  // Secure Boot refuses the build. No key yet: make it now, so that the operator can enrol it before
  // the first build.
  static std::string secure_boot_refusal(ApplyContext& ctx, const Inventory& inv, const std::string& subject,
                                         const std::string& why) {
    std::string message = "refused before any download or build: " + why;
    if (secureboot::decide_signing(inv.secure_boot).trust == secureboot::Trust::no_key) {
      const auto k = make_signing_key(ctx.root, ctx.runner, inv.secure_boot);
      ctx.log("driver.module", subject, k.message);
      if (k.made) {
        message =
            "refused before any download or build: Secure Boot is on and the kernel does not trust DKMS's key "
            "yet; " +
            k.message + ". Enrol it: mokutil --import " + inv.secure_boot.cert_path +
            " (it asks for a one-time password), reboot, and at the MokManager screen choose Enroll MOK, "
            "Continue, Yes and type that password (only a person at the console can), then apply again";
      } else {
        message += " (" + k.message + ")";
      }
    }
    return message;
  }

  // The profile's own signing key: DKMS is pointed at it before it builds anything.
  static std::optional<StepResult> point_dkms_at_profile_key(ApplyContext& ctx, const std::string& subject) {
    const auto& sg = ctx.profile.driver->kernel_module->signing;
    if (!sg) { return std::nullopt; }
    const auto w = point_dkms_at(ctx.root, *sg);
    if (!w) {
      StepResult r{
          "driver.module", subject, StepOutcome::failed, "before any build: " + w.error().message, json::object(),
          json::object(),  0};
      ctx.log("driver.module", subject, r.message);
      return r;
    }
    if (*w) {
      ctx.log("driver.module", subject, "DKMS signs with the profile's key: wrote " + std::string(kSigningDropIn));
    }
    return std::nullopt;
  }
};

// ---------------------------------------------------------------------------------------------
// driver.userspace: the .run installer of the same version, without its kernel modules.

bool userspace_in_place(const sys::SysRoot& root, const std::string& version) {
  const auto v = lifecycle::userspace_versions(root);
  return std::find(v.begin(), v.end(), version) != v.end();
}

class DriverUserspace final : public Action {
 public:
  std::string_view id() const override { return "driver.userspace"; }

  std::vector<Step> plan(const Profile& p, const Inventory&, const sys::SysRoot& root) const override {
    if (!p.driver || !p.driver->userspace_installer || userspace_in_place(root, p.driver->version)) { return {}; }
    return {
        Step{"driver.userspace",
             p.driver->version,
             "verify the installer's sha256 and run it with --silent --no-kernel-modules" +
                 (p.driver->installer_flags.empty() ? std::string() : " " + json_text(json(p.driver->installer_flags))),
             false,
             false,
             {{"installed", lifecycle::userspace_versions(root)}, {"wanted", p.driver->version}}}};
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory&) const override {
    const DriverSpec& d = *ctx.profile.driver;
    StepResult r{"driver.userspace", d.version, StepOutcome::failed, "", json::object(), json::object(), 0};
    const auto w0 = ctx.root.write_count();
    r.before["installed"] = lifecycle::userspace_versions(ctx.root);
    if (userspace_in_place(ctx.root, d.version)) {
      r.outcome = StepOutcome::unchanged;
      r.message = "libcuda.so." + d.version + " is installed";
      r.after = r.before;
      return {r};
    }
    // The loader held the flags to their grammar; checked again where they reach root's argv.
    for (const auto& f : d.installer_flags) {
      if (!grammar::is_installer_flag(f)) {
        r.outcome = StepOutcome::refused;
        r.message = "refusing the installer flag '" + grammar::shell_comment_text(f) +
                    "': expected one of the options driver.userspace.flags allows (docs/profiles.md); nothing was run";
        return {r};
      }
    }
    auto log = [&](std::string_view line) { ctx.log("driver.userspace", d.version, line); };
    auto inst = lifecycle::fetch_artifact(ctx.root, ctx.runner, *d.userspace_installer, "userspace.installer", log);
    if (!inst) {
      r.outcome = StepOutcome::refused;
      r.message = inst.error().message;
      r.writes = ctx.root.write_count() - w0;
      return {r};
    }
    std::vector<std::string> argv = {"sh", ctx.root.host_path(inst->path).string(), "--silent", "--no-kernel-modules"};
    argv.insert(argv.end(), d.installer_flags.begin(), d.installer_flags.end());
    const auto res = run_logged(ctx, "driver.userspace", d.version, argv, std::chrono::minutes(30));
    r.writes = ctx.root.write_count() - w0 + 1;
    r.after["installed"] = lifecycle::userspace_versions(ctx.root);
    r.after["installer_exit"] = res.exited ? res.exit_code : -1;
    if (!res.success()) {
      std::string tail;
      if (auto lg = ctx.root.read_text("/var/log/nvidia-installer.log", 16 << 20)) {
        const auto pos = lg->size() > 2000 ? lg->size() - 2000 : 0;
        tail = lg->substr(pos);
        r.after["installer_log_tail"] = tail;
      }
      r.message = "the installer " + inst->path + " failed: " + res.describe() +
                  (res.err.empty() ? "" : ": " + res.err.substr(0, 500)) + " (see /var/log/nvidia-installer.log)";
      return {r};
    }
    if (!userspace_in_place(ctx.root, d.version)) {
      r.message = "the installer exited 0 but no libcuda.so." + d.version +
                  " appeared (installed: " + json_text(r.after["installed"]) + "): is it the " + d.version +
                  " installer?";
      return {r};
    }
    r.outcome = StepOutcome::changed;
    r.message = "userspace driver " + d.version + " installed (--silent --no-kernel-modules)";
    if (!ctx.root.is_dir("/lib/firmware/nvidia/" + d.version)) {
      r.message += "; note: no GSP firmware in /lib/firmware/nvidia/" + d.version;
    }
    ctx.log("driver.userspace", d.version, r.message);
    return {r};
  }
};

// ---------------------------------------------------------------------------------------------
// driver.reload: swap the loaded module for the installed one when that is safe.

bool manages_nvidia(const Profile& p, const sys::SysRoot& root) {
  if (!p.driver || !p.driver->kernel_module) { return false; }
  const auto t = lifecycle::module_target(*p.driver);
  return root.is_dir(t.src_dir + "/kernel-open");  // an open-gpu-kernel-modules tree is installed
}

lifecycle::ReloadInputs reload_inputs(const Profile& p, const sys::SysRoot& root, const std::string& kernel,
                                      bool force = false) {
  lifecycle::ReloadInputs in;
  in.force = force;
  for (const auto& m : lifecycle::kUnloadOrder) {
    if (root.is_dir("/sys/module/" + m)) { in.loaded.push_back(m); }
  }
  if (auto v = root.read_attr("/sys/module/nvidia/version")) { in.loaded_version = *v; }
  if (auto v = root.read_attr("/sys/module/nvidia/srcversion")) { in.loaded_srcversion = *v; }
  const std::string ko = lifecycle::installed_module_path(root, kernel, "nvidia");
  if (!ko.empty()) {
    in.disk_version = p.driver->version;  // the DKMS copy p2pnode built (module_gaps checked its version)
    in.disk_srcversion = lifecycle::ko_srcversion(root, ko);
  }
  in.wanted_version = p.driver->version;
  in.allow_reload = p.driver->allow_reload;
  in.allow_kill_holders = p.driver->allow_kill_holders;
  in.holders = lifecycle::find_holders(root);
  in.running_kernel = kernel;
  in.next_boot_kernel = lifecycle::next_boot_kernel(root).kernel;
  for (const auto& k : lifecycle::installed_kernels(root)) {
    if (!lifecycle::installed_module_path(root, k, "nvidia").empty()) { in.kernels_with_module.push_back(k); }
  }
  return in;
}

// One reload of the NVIDIA modules: its commands (each one a change), the units it stopped (started
// again on every way out) and the record being built.
struct NvidiaReload {
  ApplyContext& ctx;
  StepResult r{"driver.reload", "nvidia", StepOutcome::failed, "", json::object(), json::object(), 0};
  std::uint64_t changes = 0;
  std::vector<std::string> stopped;

  sys::CommandResult cmd(std::vector<std::string> argv) {
    auto res = run_logged(ctx, "driver.reload", "nvidia", std::move(argv), std::chrono::minutes(2));
    ++changes;
    return res;
  }

  void restart() {
    for (const auto& u : stopped) { cmd({"systemctl", "start", "--", u}); }
  }

  // A way out once units may have been stopped: they run again, then the result.
  StepResult give_up(StepOutcome outcome, std::string message) {
    restart();
    r.outcome = outcome;
    r.message = std::move(message);
    r.writes = changes;
    return r;
  }

  // The first decision, before anything is stopped: a reload not needed, or not one that can be done.
  std::optional<StepResult> answer_without_reload(const lifecycle::ReloadDecision& first, const Inventory& inv) {
    r.before = {{"decision", lifecycle::to_string(first.kind)}, {"reason", first.reason}};
    if (const auto why = secureboot::load_refusal(inv.secure_boot);
        why && (first.kind == lifecycle::ReloadKind::reload || first.kind == lifecycle::ReloadKind::load)) {
      r.outcome = StepOutcome::reboot_required;
      r.message = "reboot required, not a reload: " + *why;
      ctx.log("driver.reload", "nvidia", r.message);
      return r;
    }
    if (first.kind == lifecycle::ReloadKind::not_needed) {
      r.outcome = StepOutcome::unchanged;
      r.message = first.reason;
      return r;
    }
    if (first.kind == lifecycle::ReloadKind::nothing_built) {
      r.outcome = StepOutcome::failed;
      r.message = first.reason;
      return r;
    }
    if (first.kind == lifecycle::ReloadKind::reboot_required || first.kind == lifecycle::ReloadKind::refused) {
      r.outcome = first.kind == lifecycle::ReloadKind::refused ? StepOutcome::refused : StepOutcome::reboot_required;
      r.message = first.reason;
      return r;
    }
    return std::nullopt;
  }

  // The units the profile names, those that run.
  void stop_units(const std::vector<std::string>& units) {
    for (const auto& u : units) {
      sys::Command c;
      c.argv = {"systemctl", "is-active", "--quiet", "--", u};
      if (!ctx.runner.run(c).success()) { continue; }
      if (cmd({"systemctl", "stop", "--", u}).success()) { stopped.push_back(u); }
    }
  }

  // The processes the decision lets go: SIGTERM, then up to 10 s for /dev/nvidia* to be free.
  std::optional<StepResult> end_holders(const lifecycle::ReloadDecision& decision) {
    for (int pid : decision.kill) { cmd({"kill", "-TERM", std::to_string(pid)}); }
    if (decision.kill.empty()) { return std::nullopt; }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!lifecycle::find_holders(ctx.root).empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (auto h = lifecycle::find_holders(ctx.root); !h.empty()) {
      return give_up(StepOutcome::refused, "processes still hold /dev/nvidia* after SIGTERM: " +
                                               lifecycle::describe(h) + "; reboot required");
    }
    return std::nullopt;
  }

  std::optional<StepResult> unload_old(const lifecycle::ReloadDecision& decision) {
    for (const auto& m : decision.unload) {
      auto res = cmd({"modprobe", "-r", m});
      if (!res.success()) {
        return give_up(StepOutcome::reboot_required, "unloading " + m + ": modprobe -r " + res.describe() +
                                                         (res.err.empty() ? "" : ": " + res.err) +
                                                         "; the old module stays loaded: reboot required");
      }
    }
    return std::nullopt;
  }

  // nvidia and nvidia_uvm, and the other modules the reload unloaded.
  std::optional<StepResult> load_new(const lifecycle::ReloadDecision& decision) {
    std::vector<std::string> load = {"nvidia", "nvidia_uvm"};
    for (const char* m : {"nvidia_modeset", "nvidia_drm", "nvidia_peermem"}) {
      if (std::find(decision.unload.begin(), decision.unload.end(), m) != decision.unload.end()) {
        load.emplace_back(m);
      }
    }
    for (const auto& m : load) {
      auto res = cmd({"modprobe", m});
      if (!res.success()) {
        return give_up(StepOutcome::failed,
                       "loading " + m + ": modprobe " + res.describe() + (res.err.empty() ? "" : ": " + res.err));
      }
    }
    return std::nullopt;
  }

  // What is loaded now, checked against the profile's driver.
  StepResult verify(const DriverSpec& d) {
    const auto v = lifecycle::verify_driver(ctx.root, ctx.runner, d.version, d.userspace_installer.has_value());
    r.after = v.observed;
    r.after["notes"] = v.notes;
    r.writes = changes;
    if (!v.ok()) {
      r.message = "loaded, but: ";
      for (std::size_t i = 0; i < v.problems.size(); ++i) { r.message += (i ? "; " : "") + v.problems[i]; }
      return r;
    }
    r.outcome = StepOutcome::changed;
    r.message = "NVIDIA " + d.version + " loaded from the DKMS copy and verified";
    ctx.log("driver.reload", "nvidia", r.message);
    return r;
  }
};

class DriverReload final : public Action {
 public:
  std::string_view id() const override { return "driver.reload"; }

  std::vector<Step> plan(const Profile& p, const Inventory& inv, const sys::SysRoot& root) const override {
    if (!manages_nvidia(p, root)) { return {}; }
    const auto d = lifecycle::decide_reload(reload_inputs(p, root, running_kernel(root, inv)));
    if (d.kind == lifecycle::ReloadKind::not_needed) { return {}; }
    // The module's key is only queued for enrolment: nothing loads it before the confirmed reboot.
    if (const auto why = secureboot::load_refusal(inv.secure_boot);
        why && (d.kind == lifecycle::ReloadKind::reload || d.kind == lifecycle::ReloadKind::load)) {
      return {Step{"driver.reload",
                   "nvidia",
                   "reboot required, not a reload: " + *why,
                   true,
                   true,
                   {{"decision", "reboot_required"}, {"secure_boot", "queued"}}}};
    }
    Step s{"driver.reload", "nvidia",
           d.reason,        d.kind == lifecycle::ReloadKind::reboot_required,
           false,           {{"decision", lifecycle::to_string(d.kind)}, {"unload", d.unload}}};
    if (d.kind == lifecycle::ReloadKind::reload || d.kind == lifecycle::ReloadKind::load) {
      s.description =
          std::string(d.kind == lifecycle::ReloadKind::load ? "load" : "reload") + " the NVIDIA modules: " + d.reason;
    }
    if (d.kind == lifecycle::ReloadKind::refused || d.kind == lifecycle::ReloadKind::nothing_built) {
      s.needs_operator = true;
    }
    return {s};
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory& inv) const override {
    const DriverSpec& d = *ctx.profile.driver;
    const std::string kernel = running_kernel(ctx.root, inv);
    NvidiaReload reload{ctx};
    auto first = lifecycle::decide_reload(reload_inputs(ctx.profile, ctx.root, kernel, ctx.force_reload));
    if (auto end = reload.answer_without_reload(first, inv)) { return {*end}; }
    // Stop the units the profile names (those that run), then look again at who holds /dev/nvidia*.
    reload.stop_units(d.stop_units);
    auto decision = lifecycle::decide_reload(reload_inputs(ctx.profile, ctx.root, kernel, ctx.force_reload));
    reload.r.before["holders"] = lifecycle::describe(lifecycle::find_holders(ctx.root));
    if (decision.kind == lifecycle::ReloadKind::refused) {
      return {reload.give_up(StepOutcome::refused, decision.reason)};
    }
    if (auto end = reload.end_holders(decision)) { return {*end}; }
    if (auto end = reload.unload_old(decision)) { return {*end}; }
    if (auto end = reload.load_new(decision)) { return {*end}; }
    reload.restart();
    return {reload.verify(d)};
  }
};

}  // namespace

std::unique_ptr<Action> make_driver_module() { return std::make_unique<DriverModule>(); }
std::unique_ptr<Action> make_driver_userspace() { return std::make_unique<DriverUserspace>(); }
std::unique_ptr<Action> make_driver_reload() { return std::make_unique<DriverReload>(); }

}  // namespace p2pnode::actions
