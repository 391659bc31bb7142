// gdrcopy.module: gdrdrv through DKMS for every kernel with headers, built against the NVIDIA
// module's staged tree (lifecycle/gdrdrv.hpp; the life cycle is the NVIDIA module's own,
// lifecycle/module_install.hpp). gdrcopy.device: gdrdrv loaded (after nvidia: modprobe resolves it)
// and /dev/gdrdrv made with the profile's mode and owner (gdrcopy/device.hpp decides), on every
// boot through p2pnode-apply.service, since neither the kernel nor udev makes the node.
#include "actions/gdrcopy.hpp"

#include "core/json_text.hpp"
#include "gdrcopy/device.hpp"
#include "lifecycle/gdrdrv.hpp"
#include "lifecycle/module_install.hpp"
#include "probe/probe.hpp"
#include "secureboot/verdict.hpp"

namespace p2pnode::actions {
namespace {
using json = nlohmann::json;

// nv-p2p.h in the NVIDIA tree gdrdrv is built against: there once driver.module placed the tree.
std::string nv_p2p_header(const DriverSpec& gdrdrv) { return gdrdrv.kernel_module->nvidia_src_dir + "/nv-p2p.h"; }

class GdrcopyModule final : public Action {
 public:
  std::string_view id() const override { return "gdrcopy.module"; }

  std::vector<Step> plan(const Profile& p, const Inventory& inv, const sys::SysRoot& root) const override {
    const auto spec = lifecycle::gdrdrv_spec(p);
    if (!spec) { return {}; }
    const auto gaps = lifecycle::module_gaps(root, *spec);
    if (gaps.empty()) { return {}; }
    const auto t = lifecycle::module_target(*spec);
    const std::string subject = t.dkms_id();
    if (const auto why = secureboot::build_refusal(inv.secure_boot)) {
      return {Step{id().data(), subject, "refused: " + *why + " (nothing is built)", false, true, {{"gaps", gaps}}}};
    }
    const auto kernels = lifecycle::kernels_with_headers(root);
    if (kernels.empty()) {
      return {Step{id().data(),
                   subject,
                   "no kernel in /lib/modules has headers: install linux-headers-" + running_kernel(root, inv) +
                       ", then apply builds " + subject + " through DKMS",
                   false,
                   true,
                   {{"gaps", gaps}}}};
    }
    const bool tree_placed = root.exists(nv_p2p_header(*spec));
    return {Step{id().data(),
                 subject,
                 "verify gdrcopy's source sha256, place it in " + t.src_dir +
                     " with a generated dkms.conf, then dkms add, "
                     "build and install gdrdrv for " +
                     json_text(json(kernels)) + " against " + spec->kernel_module->nvidia_src_dir +
                     (tree_placed ? std::string() : " (once driver.module has placed the NVIDIA tree there)"),
                 false,
                 false,
                 {{"gaps", gaps}, {"kernels", kernels}, {"nvidia_src_dir", spec->kernel_module->nvidia_src_dir}}}};
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory& inv) const override {
    const auto spec = lifecycle::gdrdrv_spec(ctx.profile);
    if (!spec) { return {}; }
    const auto t = lifecycle::module_target(*spec);
    const std::string subject = t.dkms_id();
    auto refuse = [&](std::string why) {
      StepResult r{std::string(id()), subject, StepOutcome::refused, std::move(why), json::object(), json::object(), 0};
      ctx.log(id(), subject, "refused: " + r.message);
      return std::vector<StepResult>{r};
    };
    if (const auto why = secureboot::build_refusal(inv.secure_boot)) {
      return refuse("refused before any build: " + *why);
    }
    if (!ctx.root.exists(nv_p2p_header(*spec))) {
      return refuse("gdrdrv is built against " + nv_p2p_header(*spec) + ", which is not there: the NVIDIA module " +
                    lifecycle::module_target(*ctx.profile.driver).dkms_id() +
                    " is not placed yet (driver.module places it; its step failed or did not run)");
    }
    auto r = lifecycle::install_module(ctx.root, ctx.runner, *spec, running_kernel(ctx.root, inv),
                                       [&](std::string_view line) { ctx.log(id(), subject, line); });
    r.action = id();
    ctx.log(id(), subject, std::string(to_string(r.outcome)) + ": " + r.message);
    return {r};
  }
};

sys::CommandResult run_logged(ApplyContext& ctx, std::vector<std::string> argv) {
  sys::Command c;
  c.argv = std::move(argv);
  c.timeout = std::chrono::minutes(2);
  ctx.log("gdrcopy.device", "/dev/gdrdrv", c.display());
  return ctx.runner.run(c);
}

class GdrcopyDevice final : public Action {
 public:
  std::string_view id() const override { return "gdrcopy.device"; }

  std::vector<Step> plan(const Profile& p, const Inventory& inv, const sys::SysRoot& root) const override {
    if (!p.gdrcopy || !lifecycle::gdrdrv_spec(p)) { return {}; }
    const auto w = gdrcopy::device_work(*p.gdrcopy, inv.gdrdrv);
    if (w.nothing()) { return {}; }
    std::string what;
    if (w.load) {
      const std::string k = running_kernel(root, inv);
      const bool installed = !lifecycle::installed_module_path(root, k, "gdrdrv").empty();
      what = "modprobe gdrdrv (nvidia first)" +
             std::string(installed ? "" : ", once gdrcopy.module has installed it for " + k) +
             ", then make /dev/gdrdrv from its major in /proc/devices";
    } else {
      what = std::string(w.remove_node ? "remove the stale /dev/gdrdrv, " : "") +
             (w.make_node ? "mknod /dev/gdrdrv, " : "") + (w.set_mode ? "chmod, " : "") +
             (w.set_owner ? "chown, " : "");
      what.resize(what.size() - 2);
    }
    what += " (" + gdrcopy::octal_mode(p.gdrcopy->device_mode) + " " + p.gdrcopy->device_owner + ":" +
            p.gdrcopy->device_group + ")";
    return {Step{id().data(), "/dev/gdrdrv", what, false, false, {{"why", w.why}}}};
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory& inv) const override {
    const GdrcopySpec& want = *ctx.profile.gdrcopy;
    StepResult r{std::string(id()), "/dev/gdrdrv", StepOutcome::failed, "", json::object(), json::object(), 0};
    auto w = gdrcopy::device_work(want, inv.gdrdrv);
    r.before["why"] = w.why;
    const auto writes0 = ctx.root.write_count();
    std::uint64_t commands = 0;
    auto fail = [&](std::string msg) {
      r.message = std::move(msg);
      r.writes = ctx.root.write_count() - writes0 + commands;
      ctx.log(id(), r.subject, "failed: " + r.message);
      return std::vector<StepResult>{r};
    };
    GdrdrvState g = inv.gdrdrv;
    if (w.load) {
      const std::string k = running_kernel(ctx.root, inv);
      if (lifecycle::installed_module_path(ctx.root, k, "gdrdrv").empty()) {
        std::vector<std::string> with;
        for (const auto& kk : lifecycle::kernels_with_headers(ctx.root)) {
          if (!lifecycle::installed_module_path(ctx.root, kk, "gdrdrv").empty()) { with.push_back(kk); }
        }
        if (with.empty()) {
          return fail("gdrdrv is not installed for the running kernel " + k +
                      " (gdrcopy.module builds it; see its step)");
        }
        r.outcome = StepOutcome::reboot_required;
        r.message = "gdrdrv is installed for " + json_text(json(with)) + " but not for the running kernel " + k +
                    ": it is loaded, and /dev/gdrdrv made, on the first boot into one of them";
        ctx.log(id(), r.subject, r.message);
        return {r};
      }
      const auto res = run_logged(ctx, {"modprobe", "gdrdrv"});
      ++commands;
      if (!res.success()) {
        return fail("modprobe gdrdrv " + res.describe() + (res.err.empty() ? "" : ": " + res.err) +
                    " (it needs nvidia loaded, which needs a GPU it can drive)");
      }
      g = probe::probe_gdrdrv(ctx.root);
      w = gdrcopy::device_work(want, g);
      if (w.load) { return fail("modprobe gdrdrv exited 0 but /sys/module/gdrdrv is not there"); }
    }
    if (!g.major) { return fail("gdrdrv is loaded but /proc/devices has no gdrdrv major: no node can be made"); }
    const std::string node = ctx.root.host_path("/dev/gdrdrv").string();
    const std::string mode = gdrcopy::octal_mode(want.device_mode);
    if (w.remove_node) {
      if (auto st = ctx.root.remove_file("/dev/gdrdrv"); !st) {
        return fail("removing the stale /dev/gdrdrv: " + st.error().message);
      }
    }
    auto step = [&](std::vector<std::string> argv) {
      const auto res = run_logged(ctx, argv);
      ++commands;
      return res.success() ? std::string() : argv[0] + " " + res.describe() + (res.err.empty() ? "" : ": " + res.err);
    };
    std::string err;
    if (w.make_node) { err = step({"mknod", "-m", mode, node, "c", std::to_string(*g.major), "0"}); }
    if (err.empty() && w.set_mode) { err = step({"chmod", mode, node}); }
    if (err.empty() && w.set_owner) { err = step({"chown", want.device_owner + ":" + want.device_group, node}); }
    if (!err.empty()) { return fail(err); }
    // Verify: what the probe reads now must need no more work.
    const GdrdrvState after = probe::probe_gdrdrv(ctx.root);
    const auto left = gdrcopy::device_work(want, after);
    r.after = {{"loaded", after.loaded},
               {"major", after.major ? json(*after.major) : json(nullptr)},
               {"device_mode", after.device_mode ? gdrcopy::octal_mode(*after.device_mode) : ""},
               {"device_owner", after.device_owner},
               {"device_group", after.device_group}};
    if (!left.nothing()) { return fail("after the work, " + left.why.front()); }
    r.outcome = commands == 0 && ctx.root.write_count() == writes0 ? StepOutcome::unchanged : StepOutcome::changed;
    r.writes = ctx.root.write_count() - writes0 + commands;
    r.message = "gdrdrv " + after.version.value_or("") + " loaded, /dev/gdrdrv c " + std::to_string(*after.major) +
                " 0, " + mode + " " + want.device_owner + ":" + want.device_group;
    ctx.log(id(), r.subject, r.message);
    return {r};
  }
};

}  // namespace

std::unique_ptr<Action> make_gdrcopy_module() { return std::make_unique<GdrcopyModule>(); }
std::unique_ptr<Action> make_gdrcopy_device() { return std::make_unique<GdrcopyDevice>(); }

}  // namespace p2pnode::actions
