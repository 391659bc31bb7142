// driver.kernel_hook: /etc/kernel/postinst.d/z50-p2pnode (daemon/lifecycle/kernel-postinst.sh,
// compiled in), so that installing a kernel builds and checks the profile's module for it and the
// daemon reports without waiting. Written when the profile has a kernel_module and the file differs.
#include "actions/driver_install.hpp"
#include "core/embedded.hpp"

namespace p2pnode::actions {
namespace {
using json = nlohmann::json;

std::string hook_text() { return std::string(embedded_file("lifecycle/kernel-postinst.sh").value_or("")); }

bool hook_in_place(const sys::SysRoot& root) {
  const auto have = root.read_text(kKernelHook, 1 << 20);
  return have && *have == hook_text();
}

class KernelHook final : public Action {
 public:
  std::string_view id() const override { return "driver.kernel_hook"; }

  std::vector<Step> plan(const Profile& p, const Inventory&, const sys::SysRoot& root) const override {
    if (!p.driver || !p.driver->kernel_module || hook_in_place(root)) return {};
    return {Step{"driver.kernel_hook", kKernelHook,
                 std::string("write ") + kKernelHook + ": a kernel package's postinst then builds " +
                     p.driver->kernel_module->name + "/" + p.driver->version + " for the new kernel and the daemon reports it",
                 false, false, {{"present", root.exists(kKernelHook)}}}};
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory&) const override {
    StepResult r{"driver.kernel_hook", kKernelHook, StepOutcome::failed, "", json::object(), json::object(), 0};
    r.before["present"] = ctx.root.exists(kKernelHook);
    if (hook_in_place(ctx.root)) {
      r.outcome = StepOutcome::unchanged;
      r.message = std::string(kKernelHook) + " is in place";
      return {r};
    }
    const auto w0 = ctx.root.write_count();
    auto st = ctx.root.make_dirs("/etc/kernel/postinst.d");
    if (st) st = ctx.root.write_file_atomic(kKernelHook, hook_text(), std::filesystem::perms(0755));
    r.writes = ctx.root.write_count() - w0;
    if (!st) {
      r.message = "writing " + std::string(kKernelHook) + ": " + st.error().message;
      return {r};
    }
    r.outcome = StepOutcome::changed;
    r.message = std::string("kernel-install hook written: ") + kKernelHook;
    r.after["present"] = true;
    ctx.log("driver.kernel_hook", kKernelHook, r.message);
    return {r};
  }
};

}  // namespace

std::unique_ptr<Action> make_kernel_hook() { return std::make_unique<KernelHook>(); }

}  // namespace p2pnode::actions
