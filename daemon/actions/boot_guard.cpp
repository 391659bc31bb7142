// driver.boot_guard: never boot into a kernel without the module (lifecycle/boot_guard.hpp decides).
// Holding writes the drop-in (GRUB_DEFAULT=saved), runs update-grub, sets saved_entry with
// grub-set-default to the entry of the newest kernel that has the module in the grub.cfg it wrote,
// and reads back what GRUB will boot; releasing removes the drop-in, runs update-grub and points
// saved_entry at the first entry again. A step that fails puts the drop-in (and grub.cfg) back.
// The kernel-install hook runs it right after the module step, before Debian's zz-update-grub, so
// apt's output says what was held and why.
#include <optional>

#include "actions/driver_install.hpp"
#include "core/grammar.hpp"
#include "lifecycle/boot.hpp"
#include "lifecycle/boot_guard.hpp"

namespace p2pnode::actions {
namespace {
using json = nlohmann::json;
using What = lifecycle::BootGuardDecision::What;
constexpr const char* kGrubCfg = "/boot/grub/grub.cfg";

sys::CommandResult run_grub_tool(ApplyContext& ctx, std::vector<std::string> argv) {
  sys::Command c;
  c.argv = std::move(argv);
  c.timeout = std::chrono::minutes(5);
  return ctx.runner.run(c);
}

class BootGuard final : public Action {
 public:
  std::string_view id() const override { return "driver.boot_guard"; }

  std::vector<Step> plan(const Profile& p, const Inventory& inv, const sys::SysRoot& root) const override {
    if (!p.driver || !p.driver->kernel_module) { return {}; }
    const auto d = lifecycle::decide_boot_guard(lifecycle::boot_guard_inputs(p, inv));
    if (d.what == What::nothing) { return {}; }
    return {Step{
        "driver.boot_guard",
        "grub",
        (d.what == What::hold ? "hold GRUB's default on " + d.kernel + ": " : "release GRUB's default: ") + d.reason,
        false,
        false,
        {{"held", root.exists(lifecycle::kBootGuardDropIn)}, {"next_boot", inv.kernels.next_boot}}}};
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory& inv) const override {
    StepResult r{"driver.boot_guard", "grub", StepOutcome::failed, "", json::object(), json::object(), 0};
    const auto d = lifecycle::decide_boot_guard(lifecycle::boot_guard_inputs(ctx.profile, inv));
    r.before = {{"held", ctx.root.exists(lifecycle::kBootGuardDropIn)}, {"next_boot", inv.kernels.next_boot}};
    if (d.what == What::nothing) {
      r.outcome = StepOutcome::unchanged;
      r.message = d.unsafe ? d.reason : "GRUB's default needs no hold";
      return {r};
    }
    const auto w0 = ctx.root.write_count();
    // The drop-in as it was: a failure puts it back (and grub.cfg with it, where update-grub had
    // already run), so `held` never claims a hold that is not whole, and a release that did not
    // finish is tried again on the next pass instead of leaving GRUB on the old kernel unnoticed.
    std::optional<std::string> before;
    if (ctx.root.exists(lifecycle::kBootGuardDropIn)) {
      auto text = ctx.root.read_text(lifecycle::kBootGuardDropIn);
      if (!text) {  // nothing changed yet: without its text it could not be put back
        r.message = "reading " + std::string(lifecycle::kBootGuardDropIn) + ": " + text.error().message;
        return {r};
      }
      before = std::move(*text);
    }
    bool changed = false, regenerated = false;
    const auto fail = [&](std::string why) {
      if (changed) {
        const auto st =
            before ? ctx.root.write_file_atomic(lifecycle::kBootGuardDropIn, *before, std::filesystem::perms(0644))
                   : ctx.root.remove_file(lifecycle::kBootGuardDropIn);
        if (!st) {
          why += "; putting " + std::string(lifecycle::kBootGuardDropIn) + " back failed too: " + st.error().message;
        } else if (!regenerated) {
          why += std::string("; ") + lifecycle::kBootGuardDropIn + " is as it was";
        } else if (auto u = run_grub_tool(ctx, {"update-grub"}); !u.success()) {
          why += std::string("; ") + lifecycle::kBootGuardDropIn + " is as it was, but update-grub " + u.describe() +
                 " on it: run update-grub by hand";
        } else {
          why += std::string("; ") + lifecycle::kBootGuardDropIn + " and grub.cfg are as they were";
        }
      }
      r.writes = ctx.root.write_count() - w0;
      r.message =
          (d.what == What::hold ? "holding GRUB on " + d.kernel : std::string("releasing GRUB's hold")) + ": " + why;
      return std::vector<StepResult>{r};
    };
    // update-grub first, then the entry from the grub.cfg it wrote: the entry's path (Debian's
    // "gnulinux-advanced-<uuid>>gnulinux-<release>-advanced-<uuid>") is the one GRUB will see.
    if (d.what == What::hold) {
      if (!ctx.root.exists(kGrubCfg)) {
        return fail(std::string("no ") + kGrubCfg + " (GRUB only; set the boot loader's default by hand)");
      }
      auto st = ctx.root.make_dirs("/etc/default/grub.d");
      if (st) {
        st = ctx.root.write_file_atomic(
            lifecycle::kBootGuardDropIn,
            "# Written by p2pnode (driver.boot_guard), removed by it once the newest kernel has the\n"
            "# module: " +
                grammar::shell_comment_text(d.reason) + "\nGRUB_DEFAULT=saved\n",
            std::filesystem::perms(0644));
      }
      if (!st) { return fail("writing " + std::string(lifecycle::kBootGuardDropIn) + ": " + st.error().message); }
    } else if (auto st = ctx.root.remove_file(lifecycle::kBootGuardDropIn); !st) {
      return fail("removing " + std::string(lifecycle::kBootGuardDropIn) + ": " + st.error().message);
    }
    changed = true;
    if (auto u = run_grub_tool(ctx, {"update-grub"}); !u.success()) {
      return fail("update-grub " + u.describe() + (u.err.empty() ? "" : ": " + u.err.substr(0, 300)));
    }
    regenerated = true;
    std::string entry = "0";
    if (d.what == What::hold) {
      const auto cfg = ctx.root.read_text(kGrubCfg, 4 << 20);
      if (!cfg) { return fail(std::string("update-grub left no readable ") + kGrubCfg); }
      const auto e = lifecycle::grub_entry_for(*cfg, d.kernel);
      if (!e) { return fail(std::string(kGrubCfg) + " has no entry that boots " + d.kernel); }
      entry = *e;
    }
    if (auto g = run_grub_tool(ctx, {"grub-set-default", entry}); !g.success()) {
      return fail("grub-set-default " + entry + " " + g.describe() + (g.err.empty() ? "" : ": " + g.err));
    }
    r.writes = ctx.root.write_count() - w0;
    // What GRUB boots now, read back from grub.cfg and grubenv.
    const auto now = lifecycle::next_boot_kernel(ctx.root);
    r.after = {{"held", ctx.root.exists(lifecycle::kBootGuardDropIn)}, {"next_boot", now.kernel}, {"how", now.how}};
    const std::string want =
        d.what == What::hold ? d.kernel : (inv.kernels.kernels.empty() ? "" : inv.kernels.kernels.front().release);
    if (!want.empty() && now.kernel != want) {
      return fail("GRUB would boot " + now.kernel + " (" + now.how + "), not " + want);
    }
    r.outcome = StepOutcome::changed;
    r.message =
        d.what == What::hold ? "GRUB held on " + d.kernel + ": " + d.reason : "GRUB's hold released: " + d.reason;
    ctx.log("driver.boot_guard", "grub", r.message);
    return {r};
  }
};

}  // namespace

std::unique_ptr<Action> make_boot_guard() { return std::make_unique<BootGuard>(); }

}  // namespace p2pnode::actions
