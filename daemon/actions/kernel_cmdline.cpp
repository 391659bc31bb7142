#include <regex>
#include <sstream>

#include "actions/platform_fixes.hpp"
#include "core/iommu_policy.hpp"
#include "pci/iommu.hpp"

namespace p2pnode::actions {

namespace {
// The words of a GRUB_CMDLINE_LINUX(_DEFAULT)= value with the iommu arguments that conflict with
// `arg` dropped; sets has when arg itself is among them.
std::string drop_conflicting(std::string value, const std::string& arg, bool& has, int& dropped) {
  if (!value.empty() && (value.front() == '"' || value.front() == '\'')) {
    const char quote = value.front();
    value = value.substr(1, value.rfind(quote) > 0 ? value.rfind(quote) - 1 : std::string::npos);
  }
  std::istringstream words(value);
  std::string w, kept;
  for (; words >> w;) {
    if (w == arg) { has = true; }
    const bool conflicting = !pci::iommu_cmdline_args(w).empty() && w != arg &&
                             !(arg == "iommu=pt" && (w == "intel_iommu=on" || w == "amd_iommu=on"));
    if (conflicting) {
      ++dropped;
      continue;
    }
    kept += (kept.empty() ? "" : " ") + w;
  }
  return kept;
}
}  // namespace

std::string edit_grub_default(const std::string& text, const std::string& arg, bool& changed) {
  changed = false;
  std::istringstream in(text);
  std::string line, out;
  bool found = false;
  const std::string key = "GRUB_CMDLINE_LINUX=";
  // Debian and Ubuntu put "quiet splash" (and often amd_iommu=off) in the _DEFAULT line, which
  // GRUB appends for normal boots: a conflicting argument there must go too.
  const std::string default_key = "GRUB_CMDLINE_LINUX_DEFAULT=";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      found = true;
      bool has = false;
      int dropped = 0;
      std::string kept = drop_conflicting(line.substr(key.size()), arg, has, dropped);
      if (!has) { kept += (kept.empty() ? "" : " ") + arg; }
      const std::string new_line = key + "\"" + kept + "\"";
      if (new_line != line) { changed = true; }
      out += new_line + "\n";
    } else if (line.rfind(default_key, 0) == 0) {
      bool has = false;
      int dropped = 0;
      const std::string kept = drop_conflicting(line.substr(default_key.size()), arg, has, dropped);
      if (dropped > 0) { changed = true; }
      out += dropped > 0 ? default_key + "\"" + kept + "\"\n" : line + "\n";
    } else {
      out += line + "\n";
    }
  }
  if (!found) {
    out += key + "\"" + arg + "\"\n";
    changed = true;
  }
  return out;
}

namespace {

bool cmdline_has(const Inventory& inv, const std::string& arg) {
  std::istringstream words(inv.kernel.cmdline);
  std::string w;
  while (words >> w) {
    if (w == arg) { return true; }
  }
  return false;
}

class KernelCmdlineFix final : public Action {
 public:
  std::string_view id() const override { return "kernel.cmdline"; }

  std::vector<Step> plan(const Profile& p, const Inventory& inv, const sys::SysRoot& root) const override {
    if (!p.platform.fix_kernel_cmdline || iommu_allowed(p.platform.iommu, inv.iommu.mode)) { return {}; }
    const std::string& arg = *p.platform.fix_kernel_cmdline;
    if (!root.exists("/etc/default/grub")) {
      return {{"kernel.cmdline",
               "node",
               "add " + arg +
                   " to the kernel command line: no /etc/default/grub, so the "
                   "bootloader is not GRUB; add it in your bootloader's configuration by hand and reboot",
               true,
               true,
               {{"argument", arg}}}};
    }
    bool changed = false;
    const auto text = root.read_text("/etc/default/grub").value_or("");
    edit_grub_default(text, arg, changed);
    if (!changed && cmdline_has(inv, arg)) { return {}; }
    return {{"kernel.cmdline",
             "node",
             changed ? "add " + arg + " to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub, reboot"
                     : arg + " is configured in /etc/default/grub but the running kernel lacks it: reboot",
             true,
             false,
             {{"argument", arg}}}};
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory& inv) const override {
    const auto steps = plan(ctx.profile, inv, ctx.root);
    if (steps.empty()) { return {}; }
    const std::string& arg = *ctx.profile.platform.fix_kernel_cmdline;
    StepResult r{"kernel.cmdline", "node", StepOutcome::failed, "", {{"cmdline", inv.kernel.cmdline}}, nullptr, 0};
    if (steps.front().needs_operator) {
      r.outcome = StepOutcome::refused;
      r.message = "unknown bootloader (no /etc/default/grub): add " + arg + " to the kernel command line by hand";
      return {r};
    }
    const auto text = ctx.root.read_text("/etc/default/grub");
    if (!text) {
      r.message = "reading /etc/default/grub: " + text.error().message;
      return {r};
    }
    bool changed = false;
    const std::string edited = edit_grub_default(*text, arg, changed);
    const auto before = ctx.root.write_count();
    if (changed) {
      if (auto st = ctx.root.write_file_atomic("/etc/default/grub", edited); !st) {
        r.message = "writing /etc/default/grub: " + st.error().message;
        return {r};
      }
      sys::Command cmd{{"update-grub"}, std::chrono::minutes(5)};
      const auto res = ctx.runner.run(cmd);
      if (!res.success()) {
        // Put the old file back: a half-configured bootloader is worse than none.
        (void)ctx.root.write_file_atomic("/etc/default/grub", *text);
        r.writes = ctx.root.write_count() - before + 1;
        r.message =
            "update-grub failed (" + res.describe() + "): " + res.err.substr(0, 400) + "; /etc/default/grub restored";
        return {r};
      }
      r.writes = ctx.root.write_count() - before + 1;
    }
    r.outcome = StepOutcome::reboot_required;
    r.after = {{"grub_cmdline_has", arg}};
    r.message = changed ? "added " + arg + " to GRUB_CMDLINE_LINUX and ran update-grub; reboot to apply"
                        : arg + " already configured; reboot to apply";
    return {r};
  }
};

}  // namespace

std::unique_ptr<Action> make_kernel_cmdline_fix() { return std::make_unique<KernelCmdlineFix>(); }

}  // namespace p2pnode::actions
