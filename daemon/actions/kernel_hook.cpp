// driver.kernel_hook: /etc/kernel/postinst.d/z50-p2pnode and /etc/kernel/header_postinst.d/
// z50-p2pnode (daemon/lifecycle/kernel-postinst.sh, compiled in), so that installing a kernel or
// its headers builds and checks the profile's module for it and the daemon reports without
// waiting. Written when the profile has a kernel_module and a file differs.
#include "actions/driver_install.hpp"
#include "core/embedded.hpp"
#include "core/module_package.hpp"

namespace p2pnode::actions {
namespace {
using json = nlohmann::json;

constexpr const char* kHooks[] = {kKernelHook, kHeaderHook};

std::string hook_text() { return std::string(embedded_file("lifecycle/kernel-postinst.sh").value_or("")); }

bool hook_in_place(const sys::SysRoot& root, const char* path) {
  const auto have = root.read_text(path, 1 << 20);
  return have && *have == hook_text();
}

std::string parent_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

class KernelHook final : public Action {
 public:
  std::string_view id() const override { return "driver.kernel_hook"; }

  std::vector<Step> plan(const Profile& p, const Inventory&, const sys::SysRoot& root) const override {
    std::vector<Step> out;
    if (!p.driver || !p.driver->kernel_module) { return out; }
    for (const char* path : kHooks) {
      if (hook_in_place(root, path)) { continue; }
      out.push_back(Step{"driver.kernel_hook",
                         path,
                         std::string("write ") + path + ": a kernel (or its headers) installed by apt then builds " +
                             module_package(*p.driver).dkms_id() +
                             (p.gdrcopy ? " and gdrdrv/" + p.gdrcopy->version : std::string()) +
                             " for it and the daemon reports it",
                         false,
                         false,
                         {{"present", root.exists(path)}}});
    }
    return out;
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory&) const override {
    std::vector<StepResult> out;
    for (const char* path : kHooks) { out.push_back(write_hook(ctx, path)); }
    return out;
  }

 private:
  static StepResult write_hook(ApplyContext& ctx, const char* path) {
    StepResult r{"driver.kernel_hook", path, StepOutcome::failed, "", json::object(), json::object(), 0};
    r.before["present"] = ctx.root.exists(path);
    if (hook_in_place(ctx.root, path)) {
      r.outcome = StepOutcome::unchanged;
      r.message = std::string(path) + " is in place";
      return r;
    }
    const auto w0 = ctx.root.write_count();
    auto st = ctx.root.make_dirs(parent_of(path));
    if (st) { st = ctx.root.write_file_atomic(path, hook_text(), std::filesystem::perms(0755)); }
    r.writes = ctx.root.write_count() - w0;
    if (!st) {
      r.message = "writing " + std::string(path) + ": " + st.error().message;
      return r;
    }
    r.outcome = StepOutcome::changed;
    r.message = std::string("kernel-install hook written: ") + path;
    r.after["present"] = true;
    ctx.log("driver.kernel_hook", path, r.message);
    return r;
  }
};

}  // namespace

std::unique_ptr<Action> make_kernel_hook() { return std::make_unique<KernelHook>(); }

}  // namespace p2pnode::actions
