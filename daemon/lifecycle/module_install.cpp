#include "lifecycle/module_install.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/grammar.hpp"
#include "core/json_text.hpp"
#include "dkms/conf.hpp"
#include "dkms/initramfs.hpp"
#include "dkms/status.hpp"
#include "lifecycle/artifact.hpp"
#include "lifecycle/boot.hpp"
#include "lifecycle/build_lock.hpp"
#include "lifecycle/build_progress.hpp"
#include "lifecycle/dkms_run.hpp"
#include "lifecycle/module_conflicts.hpp"
#include "lifecycle/module_stage.hpp"
#include "lifecycle/nvidia_core.hpp"
#include "lifecycle/own_modules.hpp"
#include "lifecycle/patch_check.hpp"
#include "nvidia/breakage.hpp"
#include "nvidia/forecast.hpp"
#include "nvidia/sha256.hpp"

namespace p2pnode::lifecycle {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// One install of a module: the package, the commands run for it and the record being built, shared
// by the steps install_module takes in turn. A step that ends the install returns the result.
struct ModuleInstall {
  ModuleInstall(const sys::SysRoot& sysroot, sys::CommandRunner& command_runner, const DriverSpec& spec,
                const std::string& running, const ProgressFn& progress)
      : root(sysroot),
        runner(command_runner),
        d(spec),
        running_kernel(running),
        log(progress),
        t(module_target(spec)),
        subject(t.name + "/" + t.version),
        r{"driver.module", subject, StepOutcome::failed, "", json::object(), json::object(), 0},
        writes0(sysroot.write_count()),
        run(command_runner, progress),
        conf_path(sys::join(t.src_dir, "dkms.conf")),
        prev(std::string(kStateDir) + "/prev/" + t.dir_name()) {}

  const sys::SysRoot& root;
  sys::CommandRunner& runner;
  const DriverSpec& d;
  const std::string& running_kernel;
  const ProgressFn& log;
  const ModuleTarget t;
  const std::string subject;
  StepResult r;
  const std::uint64_t writes0;
  Runner run;
  const std::string conf_path;
  const std::string prev;  // the previous source tree, kept until the install succeeded
  std::string note;        // said after every outcome: the running kernel's headers, conflicts left, …

  // What the steps found, in the order they find it.
  std::vector<std::string> kernels;  // with headers
  bool conf_fixed = false;
  std::vector<dkms::StatusEntry> st_before;
  std::optional<Stamp> old_stamp;
  bool source_changed = false;
  Fetched src;
  std::vector<PatchFile> patches;
  Staged staged;
  json conflicts = json::array();
  std::vector<std::pair<std::string, std::string>> other_regs;
  std::vector<std::string> stale;
  bool replacing = false;
  bool added = false;
  std::vector<std::string> done, failed, installed_now;  // installed_now: by this apply
  std::string fail_msg;
  std::vector<std::string> verified;
  BootChoice boot;

  StepResult finish(StepOutcome o, std::string msg) {
    r.outcome = o;
    r.message = std::move(msg);
    r.writes = root.write_count() - writes0 + run.changes();
    return r;
  }

  // The loader checked the name and version; the paths that remove_tree and move_tree act on are
  // checked again here, where they are used.
  std::optional<StepResult> refuse_unsafe_paths() {
    if (!grammar::is_dkms_name(t.name) || !grammar::is_dkms_name(t.version) ||
        !grammar::stays_under("/usr/src", t.src_dir) || !grammar::stays_under(kStateDir, t.stamp)) {
      return finish(StepOutcome::failed,
                    "refusing the DKMS package '" + grammar::shell_comment_text(subject) +
                        "': expected a name and version of [a-z0-9._+-] whose directory stays under /usr/src");
    }
    return std::nullopt;
  }

  // Another build of this package in progress (the kernel hook's, an operator's): wait for it,
  // then look again.
  Result<BuildLock> wait_for_other_builds() {
    const std::string lock_path = build_lock_path(t.dir_name());
    return BuildLock::acquire(root, lock_path, [&](const std::string& holder) {
      log("waiting for the build of " + subject + " in progress (" + holder + ", " + lock_path + ")");
    });
  }

  // DKMS builds for the kernels with headers; the running kernel without them is only noted.
  std::optional<StepResult> find_kernels() {
    kernels = kernels_with_headers(root);
    r.before["kernels_with_headers"] = kernels;
    r.before["running_kernel"] = running_kernel;
    if (kernels.empty()) {
      return finish(StepOutcome::failed, "no kernel in /lib/modules has headers: install linux-headers-" +
                                             running_kernel + " (DKMS would stop with exit 21)");
    }
    if (!running_kernel.empty() && !contains(kernels, running_kernel)) {
      note = "; the running kernel " + running_kernel + " has no headers (install linux-headers-" + running_kernel +
             "): the module is only available after booting one of " + json_text(json(kernels));
    }
    return std::nullopt;
  }

  // A dkms.conf staged by an earlier p2pnode with AUTOINSTALL: rewritten without it (no rebuild).
  std::optional<StepResult> drop_autoinstall() {
    if (auto text = root.read_text(conf_path); text) {
      if (auto fixed = dkms::without_autoinstall(*text)) {
        conf_fixed = true;
        if (auto st = root.write_file_atomic(conf_path, *fixed); !st) {
          return finish(StepOutcome::failed,
                        "could not rewrite " + conf_path + " without AUTOINSTALL: " + st.error().message);
        }
        log("removed AUTOINSTALL from " + conf_path +
            ": p2pnode's kernel hook builds new kernels, and never fails their installation");
      }
    }
    return std::nullopt;
  }

  // Check: everything in place per the filesystem, confirmed by DKMS itself.
  std::optional<StepResult> check_in_place() {
    const auto gaps = module_gaps(root, d);
    const auto status_before = status_of(run, t.name);
    if (!status_before) {
      return finish(StepOutcome::failed,
                    subject + ": DKMS's state is unknown, nothing was built: " + status_before.error().message);
    }
    st_before = *status_before;
    json sb = json::array();
    for (const auto& e : st_before) { sb.push_back(e.module + "/" + e.version + " " + e.kernel + " " + e.state); }
    r.before["dkms_status"] = sb;
    r.before["gaps"] = gaps;
    bool all_installed = true;
    for (const auto& k : kernels) { all_installed = all_installed && installed_for(st_before, t.version, k); }
    if (gaps.empty() && all_installed) {
      r.after = r.before;
      if (conf_fixed) {
        return finish(StepOutcome::changed, subject + " is installed through DKMS for " + json_text(json(kernels)) +
                                                "; AUTOINSTALL removed from " + conf_path + note);
      }
      return finish(StepOutcome::unchanged,
                    subject + " is installed through DKMS for " + json_text(json(kernels)) + note);
    }
    // What the last install recorded: a changed source is built again for every kernel.
    old_stamp = read_stamp(root, t.stamp);
    source_changed = !old_stamp || old_stamp->identity != t.identity;
    return std::nullopt;
  }

  // Nothing to do but builds that failed with these very inputs (a box held off its newest kernel,
  // at every boot): answered from the records, without fetching and staging the source again.
  std::optional<StepResult> answer_blocked_from_records() {
    if (source_changed || !root.exists(conf_path)) { return std::nullopt; }
    std::vector<std::string> installed, blocked;
    for (const auto& k : kernels) {
      if (installed_for(st_before, t.version, k) && module_in_place(root, t, old_stamp, k)) {
        installed.push_back(k);
      } else if (failed_with_these_inputs(root, t, k)) {
        blocked.push_back(k);
      }
    }
    if (installed.empty() || blocked.empty() || installed.size() + blocked.size() != kernels.size()) {
      return std::nullopt;
    }
    std::string msg;
    for (const auto& k : blocked) {
      log("build for " + k + " not retried: it failed with the same source and headers (" + failed_log_path(t, k) +
          ")");
      msg += (msg.empty() ? "" : "; ") + not_retried(t, k);
    }
    r.after["installed_kernels"] = installed;
    return finish(StepOutcome::failed, subject + ": " + msg + "; installed for " + json_text(json(installed)) +
                                           " only; a reboot into " + json_text(json(blocked)) +
                                           " would come up without " + subject + note);
  }

  // Fetch and verify every artifact before touching anything.
  std::optional<StepResult> fetch_sources() {
    auto fetched = fetch_artifact(root, runner, d.kernel_module->artifact, "kernel_module.source", log);
    if (!fetched) { return finish(StepOutcome::refused, fetched.error().message); }
    src = *fetched;
    for (std::size_t i = 0; i < d.kernel_module->patches.size(); ++i) {
      const Artifact& a = d.kernel_module->patches[i];
      if (a.builtin) {
        const auto text = nvidia::builtin_patch(*a.builtin);
        if (!text) {
          return finish(StepOutcome::refused,
                        "kernel_module.patches[" + std::to_string(i) + "]: no builtin patch '" + *a.builtin + "'");
        }
        PatchFile pf{"", std::string(*text), ""};
        if (const auto* b = nvidia::find_breakage(nvidia::builtin_breakages(), *a.builtin)) {
          pf.match = nvidia::dkms_patch_match(*b);
        }
        log("builtin patch " + *a.builtin +
            (pf.match.empty() ? " (every kernel; it tests the headers itself)"
                              : " (kernels matching " + pf.match + ")"));
        patches.push_back(std::move(pf));
        continue;
      }
      auto p = fetch_artifact(root, runner, a, "kernel_module.patches[" + std::to_string(i) + "]", log);
      if (!p) { return finish(StepOutcome::refused, p.error().message); }
      if (p->is_dir) {
        return finish(StepOutcome::refused,
                      "kernel_module.patches[" + std::to_string(i) + "] is a directory, not a patch file");
      }
      patches.push_back({p->path, "", ""});
    }
    log("sources verified: " + src.path + " sha256 " + src.sha256 + ", " + std::to_string(patches.size()) +
        " patch(es)");
    return std::nullopt;
  }

  // The source and its patches in p2pnode's state with their dkms.conf, refused there (before any
  // build) when a module would replace one of the kernel's own, a patch does not apply or the
  // preflight finds what would stop the build.
  std::optional<StepResult> stage_and_judge(const PreflightFn& preflight) {
    auto tree = stage(root, runner, d, t, src, patches);
    if (!tree) { return finish(StepOutcome::refused, "staging " + subject + ": " + tree.error().message); }
    staged = std::move(tree.value());
    // A module named like one of the kernel's own would replace it (the boot drive's nvme.ko).
    std::vector<std::string> judged_kernels = kernels;
    if (!running_kernel.empty() && !contains(judged_kernels, running_kernel) &&
        root.is_dir(sys::join("/lib/modules", running_kernel))) {
      judged_kernels.insert(judged_kernels.begin(), running_kernel);
    }
    if (auto st = refuse_kernel_own_modules(root, staged.modules, judged_kernels); !st) {
      (void)root.remove_tree(staged.dir);
      return finish(StepOutcome::refused, "refused before any build: " + st.error().message +
                                              "; nothing in DKMS, /usr/src or /lib/modules was changed");
    }
    if (auto st = check_patches_apply(root, run, staged, d.kernel_module->patches, "the staged tree of " + subject);
        !st) {
      return finish(StepOutcome::refused, "refused before any build: " + st.error().message +
                                              "\nnothing in DKMS, /usr/src or /lib/modules was changed");
    }
    if (preflight) {
      const auto tests = nvidia::read_source_tests(root, staged.dir);
      if (const auto stops = preflight(tests); !stops.empty()) {
        r.before["build_stops"] = stops;
        return finish(StepOutcome::refused, "refused before any build (the staged source read): " + stops.front() +
                                                "; nothing in DKMS, /usr/src or /lib/modules was changed");
      }
    }
    r.after["dkms_conf"] = staged.conf_text;
    r.after["modules"] = staged.modules;
    return std::nullopt;
  }

  // An NVIDIA open tree's kernel-independent core, built once for every kernel when it can be.
  std::optional<StepResult> provide_open_core() {
    if (staged.kind != dkms::TreeKind::nvidia_open) { return std::nullopt; }
    if (!staged.core.reuse) {
      log("core: every kernel's build compiles src/nvidia and src/nvidia-modeset itself: " + staged.core.why_not);
      return std::nullopt;
    }
    const std::string core_log = std::string(kStateDir) + "/logs/" + t.dir_name() + "-core.log";
    auto core = provide_core(root, run, staged, src.sha256, core_log);
    if (!core) {
      return finish(StepOutcome::failed,
                    "the kernel-independent core of " + subject + ": " + core.error().message +
                        "; nothing in DKMS, /usr/src or /lib/modules was changed (an installed module stays)");
    }
    r.after["core"] = {{"key", core->key}, {"from_cache", core->from_cache}};
    log("core: " + core->message);
    return std::nullopt;
  }

  // Conflicts: other DKMS packages building the same modules, stale copies modprobe could pick.
  void find_conflicts() {
    other_regs = other_registrations(root, t, staged.modules);
    stale = stale_modules(root, staged.modules, kernels);
    for (const auto& [m, v] : other_regs) { conflicts.push_back("dkms " + m + "/" + v); }
    for (const auto& s : stale) { conflicts.push_back(s); }
    r.before["conflicts"] = conflicts;
    if (!conflicts.empty() && d.conflicts == ConflictPolicy::report) {
      note += "; conflicts left in place (driver.conflicts: report): " + json_text(conflicts);
    }
  }

  // Replacing an install: prove the new source builds (in a scratch DKMS tree) before touching it.
  std::optional<StepResult> trial_build() {
    for (const auto& k : kernels) { replacing = replacing || installed_for(st_before, t.version, k); }
    if (!replacing || !source_changed) {
      return std::nullopt;  // same source, a new kernel: nothing to prove
    }
    // Per package: gdrdrv's and the NVIDIA module's trial builds may run at once (hook and daemon).
    const std::string scratch = std::string(kStateDir) + "/trial/" + t.dir_name();
    (void)root.remove_tree(scratch);
    (void)root.make_dirs(scratch);
    const std::string k = contains(kernels, running_kernel) ? running_kernel : kernels.front();
    auto progress =
        watch_build(root, sys::join(scratch, t.name, t.version, "build", "make.log"), "dkms trial build " + k, log);
    auto tr = run.run(
        "dkms trial build " + k,
        {"dkms", "build", "-m", t.name, "-v", t.version, "-k", k, "--dkmstree", root.host_path(scratch).string(),
         "--sourcetree", root.host_path(std::string(kStateDir) + "/stage").string()},
        std::chrono::hours(2), false);
    progress.reset();
    if (!tr.success()) {
      // Keep make.log where the operator can read it after the scratch tree is gone.
      const std::string kept = std::string(kStateDir) + "/logs/" + t.dir_name() + "-" + k + ".make.log";
      (void)root.remove_file(kept);
      if (auto lg = root.read_text(sys::join(scratch, t.name, t.version, "build", "make.log"), 16 << 20)) {
        (void)root.make_dirs(std::string(kStateDir) + "/logs");
        (void)root.write_file_atomic(kept, *lg);
      }
      const std::string msg =
          failure_report("trial build of the changed source for " + k, tr, root, kept, r.after, t.version);
      (void)root.remove_tree(scratch);
      return finish(StepOutcome::failed, msg + "; the installed " + subject + " was left in place");
    }
    (void)root.remove_tree(scratch);
    return std::nullopt;
  }

  // Swap the source: the previous tree is kept beside the state until the install succeeded.
  std::optional<StepResult> swap_source() {
    (void)root.remove_tree(prev);
    if (root.exists(t.src_dir)) {
      (void)root.make_dirs(std::string(kStateDir) + "/prev");
      if (auto st = root.move_tree(t.src_dir, prev); !st) {
        return finish(StepOutcome::failed, "moving the old " + t.src_dir + " aside: " + st.error().message);
      }
    }
    (void)root.make_dirs("/usr/src");
    if (auto st = root.move_tree(staged.dir, t.src_dir); !st) {
      return finish(StepOutcome::failed, "placing the source in " + t.src_dir + ": " + st.error().message);
    }
    log("source placed in " + t.src_dir);
    return std::nullopt;
  }

  // Register, build, install for each kernel with headers.
  std::optional<StepResult> register_package() {
    added = std::any_of(st_before.begin(), st_before.end(), [&](const auto& e) { return e.version == t.version; });
    if (!added) {
      auto a = run.run("dkms add", {"dkms", "add", "-m", t.name, "-v", t.version}, std::chrono::minutes(5), true);
      if (!a.success() && !(a.exited && a.exit_code == 3)) {
        return finish(StepOutcome::failed, failure_report("dkms add " + subject, a, root, "", r.after));
      }
    }
    return std::nullopt;
  }

  void build_and_install(const std::string& k) {
    if (!source_changed && installed_for(st_before, t.version, k)) {
      done.push_back(k);
      return;
    }
    const std::string kept = failed_log_path(t, k);
    const std::string inputs_path = inputs_path_of(t, k);
    const std::string inputs = build_inputs(root, t, k);
    if (failed_with_these_inputs(root, t, k)) {
      failed.push_back(k);
      log("build for " + k + " not retried: it failed with the same source and headers (" + kept + ")");
      fail_msg += (fail_msg.empty() ? "" : "; ") + not_retried(t, k);
      return;
    }
    std::vector<std::string> b = {"dkms", "build", "-m", t.name, "-v", t.version, "-k", k};
    if (source_changed) { b.push_back("--force"); }
    auto progress =
        watch_build(root, sys::join("/var/lib/dkms", t.name, t.version, "build", "make.log"), "dkms build " + k, log);
    auto br = run.run("dkms build " + k, b, std::chrono::hours(2), true);
    progress.reset();
    if (!br.success()) {
      failed.push_back(k);
      // Keep this kernel's make.log where driver.kernels finds it (DKMS's build/ is reused by the next build).
      std::string log_path = sys::join("/var/lib/dkms", t.name, t.version, "build", "make.log");
      if (auto lg = root.read_text(log_path, 16 << 20)) {
        (void)root.make_dirs(kept.substr(0, kept.rfind('/')));
        if (root.write_file_atomic(kept, *lg)) { log_path = kept; }
      }
      // A build that timed out or was killed may pass next time: only a failed make is remembered.
      if (br.exited && br.exit_code == 10) { (void)root.write_file_atomic(inputs_path, inputs); }
      fail_msg +=
          (fail_msg.empty() ? "" : "; ") + failure_report("build for " + k, br, root, log_path, r.after, t.version);
      return;
    }
    (void)root.remove_tree(kept.substr(0, kept.rfind('/')));
    auto ir = run.run("dkms install " + k, {"dkms", "install", "-m", t.name, "-v", t.version, "-k", k, "--force"},
                      std::chrono::minutes(30), true);
    if (!ir.success()) {
      failed.push_back(k);
      fail_msg += (fail_msg.empty() ? "" : "; ") + failure_report("install for " + k, ir, root, "", r.after);
      return;
    }
    done.push_back(k);
    installed_now.push_back(k);
  }

  // The record of what this source is and where it went: the next apply compares the profile with it.
  void write_stamp(const std::vector<std::string>& ks) {
    json stamp = {{"format", kStampFormat},
                  {"identity", t.identity},
                  {"kernels", ks},
                  {"modules", staged.modules},
                  {"source_sha256", src.sha256}};
    (void)root.make_dirs(kStateDir);
    if (auto st = root.write_file_atomic(t.stamp, json_text(stamp, 2) + "\n"); !st) {
      note += "; could not write " + t.stamp + ": " + st.error().message;
    }
  }

  // Verify with DKMS itself.
  std::optional<StepResult> verify_with_dkms() {
    const auto status_after = status_of(run, t.name, t.version);
    if (!status_after) {
      // Unconfirmed is not undone: DKMS said it built and installed; the next apply asks DKMS again
      // (its check) without building this source a second time.
      if (!done.empty()) { write_stamp(done); }
      return finish(StepOutcome::failed, subject + ": DKMS built and installed it for " + json_text(json(done)) +
                                             " but could not confirm it: " + status_after.error().message + note);
    }
    const auto& st_after = *status_after;
    json sa = json::array();
    for (const auto& e : st_after) { sa.push_back(e.module + "/" + e.version + " " + e.kernel + " " + e.state); }
    r.after["dkms_status"] = sa;
    for (const auto& k : done) {
      if (installed_for(st_after, t.version, k)) { verified.push_back(k); }
    }
    r.after["installed_kernels"] = verified;
    if (!verified.empty()) { write_stamp(verified); }
    return std::nullopt;
  }

  // Conflicts the profile lets us remove, only once ours is in place (a failed build keeps the old
  // module). DKMS may take our same-named files with the other package: reinstall ours if so.
  void remove_conflicts() {
    if (d.conflicts != ConflictPolicy::remove || !failed.empty() || verified.empty()) { return; }
    for (const auto& [m, v] : other_regs) {
      auto rm = run.run("dkms remove " + m + "/" + v, {"dkms", "remove", "-m", m, "-v", v, "--all"},
                        std::chrono::minutes(10), true);
      if (!rm.success()) { note += "; could not remove dkms " + m + "/" + v + ": " + rm.describe(); }
    }
    for (const auto& s : stale) {
      const std::string aside = std::string(kStateDir) + "/aside" + s;
      (void)root.make_dirs(aside.substr(0, aside.rfind('/')));
      if (auto st = root.move_tree(s, aside); !st) {
        note += "; could not move " + s + " aside: " + st.error().message;
      } else {
        log("moved stale " + s + " to " + aside);
      }
    }
    for (const auto& k : verified) {
      bool complete = true;
      for (const auto& m : staged.modules) { complete = complete && !installed_module_path(root, k, m).empty(); }
      if (!complete) {
        run.run("dkms install " + k, {"dkms", "install", "-m", t.name, "-v", t.version, "-k", k, "--force"},
                std::chrono::minutes(30), true);
        if (!contains(installed_now, k)) { installed_now.push_back(k); }
      }
      if (!stale.empty()) { run.run("depmod " + k, {"depmod", "-a", k}, std::chrono::minutes(5), true); }
    }
    if (!other_regs.empty() || !stale.empty()) { note += "; removed conflicts: " + json_text(conflicts); }
  }

  // The NVIDIA modules can be pulled into an initramfs (listed in initramfs-tools' modules, or an
  // nvidia-drm modeset hook): then refresh it for the kernels whose modules this apply installed
  // (not those it found in place). Otherwise it carries none of them and is left alone (under a
  // minute per kernel saved).
  void refresh_initramfs() {
    dkms::InitramfsConfig iconf;
    if (auto m = root.read_text("/etc/initramfs-tools/modules")) { iconf.modules_file = *m; }
    for (const char* dir : {"/etc/initramfs-tools/hooks", "/usr/share/initramfs-tools/hooks"}) {
      for (const auto& f : root.list_dir(dir)) {
        if (auto text = root.read_text(sys::join(dir, f), 1 << 20)) { iconf.hook_texts.push_back(*text); }
      }
    }
    const auto pulled = dkms::initramfs_pulls_in(staged.modules, iconf);
    if (staged.kind == dkms::TreeKind::nvidia_open && root.exists("/usr/sbin/update-initramfs") && !pulled.empty()) {
      for (const auto& k : verified) {
        if (contains(installed_now, k) && root.exists("/boot/initrd.img-" + k)) {
          auto u =
              run.run("update-initramfs " + k, {"update-initramfs", "-u", "-k", k}, std::chrono::minutes(10), true);
          if (!u.success()) { note += "; update-initramfs -u -k " + k + ": " + u.describe(); }
        }
      }
    }
  }

  void read_next_boot() {
    boot = lifecycle::next_boot_kernel(root);
    r.after["next_boot_kernel"] = boot.kernel;
    r.after["next_boot_how"] = boot.how;
  }

  bool installed_everywhere() const { return failed.empty() && verified.size() == kernels.size(); }

  // Not installed for every kernel: what was kept, and what a reboot into the others would meet.
  StepResult report_shortfall() {
    std::string kept_msg;
    if (verified.empty() && !replacing) {
      // Nothing of ours was ever installed: undo the registration and the source, so DKMS is as
      // it was before this apply.
      if (!added) {
        run.run("dkms remove " + subject, {"dkms", "remove", "-m", t.name, "-v", t.version, "--all"},
                std::chrono::minutes(10), true);
      }
      (void)root.remove_tree(t.src_dir);
      if (root.exists(prev)) { (void)root.move_tree(prev, t.src_dir); }
      (void)root.remove_file(t.stamp);
      kept_msg = "; nothing was installed: DKMS and /usr/src were put back as they were";
    } else if (verified.empty()) {
      kept_msg = "; the installed module was kept";
    } else {
      kept_msg = "; installed for " + json_text(json(verified)) + " only";
    }
    if (!failed.empty()) {
      kept_msg += "; a reboot into " + json_text(json(failed)) + " would come up without " + subject;
    }
    return finish(
        StepOutcome::failed,
        subject + ": " + (fail_msg.empty() ? "dkms status does not say installed" : fail_msg) + kept_msg + note);
  }

  // Installed for every kernel: the previous source goes, and a running kernel without it is named.
  StepResult report_installed() {
    (void)root.remove_tree(prev);
    std::string after_reboot;
    if (!contains(verified, running_kernel) && !verified.empty()) {
      const std::string k = contains(verified, boot.kernel) ? boot.kernel : verified.front();
      after_reboot = "; the running kernel " + (running_kernel.empty() ? std::string("(unknown)") : running_kernel) +
                     " does not have it: after a reboot into " + k +
                     (k == boot.kernel ? " (the next boot kernel: " + boot.how + ")" : "") + " the NVIDIA " +
                     t.version + " module with P2P is there";
    }
    return finish(StepOutcome::changed,
                  subject + " built and installed through DKMS for " + json_text(json(verified)) + after_reboot + note);
  }
};

}  // namespace

StepResult install_module(const sys::SysRoot& root, sys::CommandRunner& runner, const DriverSpec& d,
                          const std::string& running_kernel, const ProgressFn& log, const PreflightFn& preflight) {
  ModuleInstall install(root, runner, d, running_kernel, log);
  if (auto end = install.refuse_unsafe_paths()) { return *end; }
  auto lock = install.wait_for_other_builds();
  if (!lock) { return install.finish(StepOutcome::failed, "one build at a time: " + lock.error().message); }
  if (auto end = install.find_kernels()) { return *end; }
  if (auto end = install.drop_autoinstall()) { return *end; }
  if (auto end = install.check_in_place()) { return *end; }
  if (auto end = install.answer_blocked_from_records()) { return *end; }
  if (auto end = install.fetch_sources()) { return *end; }
  if (auto end = install.stage_and_judge(preflight)) { return *end; }
  if (auto end = install.provide_open_core()) { return *end; }
  install.find_conflicts();
  if (auto end = install.trial_build()) { return *end; }
  if (auto end = install.swap_source()) { return *end; }
  if (auto end = install.register_package()) { return *end; }
  for (const auto& k : install.kernels) { install.build_and_install(k); }
  if (auto end = install.verify_with_dkms()) { return *end; }
  install.remove_conflicts();
  install.refresh_initramfs();
  install.read_next_boot();
  if (!install.installed_everywhere()) { return install.report_shortfall(); }
  return install.report_installed();
}

}  // namespace p2pnode::lifecycle
