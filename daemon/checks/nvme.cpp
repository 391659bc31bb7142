// nvme.binding: the NVMe controllers the seed binds to vfio-pci by hand, as the kernel shows them.
// The trap it exists for: vfio-pci (>= 5.19) lets an idle device fall to D3hot, where BAR0 reads
// all-Fs; a drive on vfio-pci must be D0 with power/control "on" and Memory+BusMaster set.
// A drive the profile wants on vfio-pci that is still on nvme is a finding on that drive: an error
// when p2pnode refuses to unbind it (in use; the reasons named), else a warning `apply` closes.
#include <cctype>
#include <cstdio>
#include "core/hex.hpp"

#include "checks/check.hpp"
#include "nvme/safety.hpp"
#include "nvme/select.hpp"
#include "pci/config_space.hpp"

namespace p2pnode::checks {

namespace {
const NvmeControllerUse* usage_of(const Inventory& inv, const std::string& bdf) {
  for (const auto& u : inv.nvme_usage) {
    if (u.bdf == bdf) { return &u; }
  }
  return nullptr;
}

// `f` for a controller the profile wants on vfio-pci and which is not there.
void judge_wanted_elsewhere(const nvme::Selected& s, const PciDevice& d, const Inventory& inv, Finding& f) {
  const std::string on = d.driver.empty() ? std::string("no driver") : d.driver;
  f.expected = {{"driver", s.drive->driver}};
  f.observed["selected_by"] = s.matched_by;
  const NvmeControllerUse* use = d.driver == "nvme" ? usage_of(inv, d.bdf) : nullptr;
  const auto decision = use ? nvme::decide_unbind_safety(*use, s.drive->wipe_ok) : nvme::SafetyDecision{};
  if (!decision.safe) {
    f.severity = Severity::error;
    f.observed["refused"] = decision.reasons;
    f.summary = "on " + on + ", the profile wants " + s.drive->driver + " (" + s.matched_by + "), refused: ";
    for (std::size_t i = 0; i < decision.reasons.size(); ++i) { f.summary += (i ? "; " : "") + decision.reasons[i]; }
    const std::string refusal = nvme::describe_refusal(*use, decision);
    const auto advice = refusal.rfind(" (");
    f.remediation = (advice == std::string::npos ? refusal : refusal.substr(advice + 2, refusal.size() - advice - 3)) +
                    ". Then `p2pnode apply` binds it; or take the drive out of the profile.";
    f.remediation[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(f.remediation[0])));
    return;
  }
  f.severity = Severity::warning;
  if (!decision.waived.empty()) { f.observed["wipe_ok_waived"] = decision.waived; }
  f.summary = "on " + on + ", the profile wants " + s.drive->driver + " (" + s.matched_by + ")";
  f.remediation = "Run `p2pnode apply` (it binds the drive" +
                  std::string(decision.waived.empty() ? "" : "; wipe_ok allows losing its data") + ").";
}
}  // namespace

std::vector<Finding> check_nvme_binding(const Profile& p, const Inventory& inv) {
  std::vector<Finding> out;
  const bool profile_wants = p.nvme && !p.nvme->drives.empty();
  std::size_t wanted_vfio = 0, on_vfio = 0;
  if (profile_wants) {
    for (const auto& d : p.nvme->drives) { wanted_vfio += d.driver == "vfio-pci"; }
  }
  std::vector<nvme::Selected> selected;
  std::vector<std::string> unmatched;  // as plan says it: "no NVMe controller matches the drive with serial …"
  if (profile_wants) {
    auto sel = nvme::select_nvme_drives(p.nvme->drives, inv.nvme_identities);
    selected = std::move(sel.selected);
    unmatched = std::move(sel.problems);
  }
  for (const auto& why : unmatched) {
    Finding f = make_finding("nvme.binding", "node", Severity::error, why);
    f.observed = {{"controllers", inv.nvme_identities.size()}};
    f.expected = {
        {"drive", why.substr(why.find("the drive with ") == std::string::npos ? 0 : why.find("the drive with ") + 15)}};
    f.remediation =
        "Check that the drive is installed and its serial is as written (cat /sys/class/nvme/nvme*/serial, "
        "trailing blanks are ignored), or fix nvme.drives in the profile.";
    out.push_back(std::move(f));
  }
  for (const PciDevice* d : inv.nvme_controllers()) {
    const bool vfio = d->driver == "vfio-pci";
    on_vfio += vfio;
    if (!vfio && !profile_wants) { continue; }
    const auto pm = pci::decode_pm_state(d->config);
    const auto cmd = pci::decode_command(d->config);
    Finding f = make_finding("nvme.binding", d->bdf, Severity::ok, "");
    f.observed = {{"driver", d->driver.empty() ? "none" : d->driver},
                  {"power_state", d->power_state},
                  {"power_control", d->power_control},
                  {"pmcsr", pm ? nlohmann::json("D" + std::to_string(*pm)) : nlohmann::json(nullptr)},
                  {"command", cmd ? nlohmann::json(hex4(*cmd)) : nlohmann::json(nullptr)}};
    if (!vfio) {
      f.summary = "on " + (d->driver.empty() ? std::string("no driver") : d->driver);
      for (const auto& s : selected) {
        if (s.bdf == d->bdf && s.drive->driver == "vfio-pci") { judge_wanted_elsewhere(s, *d, inv, f); }
      }
      out.push_back(std::move(f));
      continue;
    }
    f.expected = {{"power_state", "D0"}, {"power_control", "on"}, {"command", "Memory+BusMaster"}};
    std::vector<std::string> problems;
    const bool d0 = pm ? *pm == 0 : d->power_state == "D0";
    if (!d0) {
      problems.push_back("in " + (pm ? "D" + std::to_string(*pm) : d->power_state) + " (BAR0 reads all-Fs there)");
    }
    if (d->power_control != "on") {
      problems.push_back("power/control is " + d->power_control + " (it will drop to D3hot when idle)");
    }
    if (cmd && (*cmd & (pci::kCmdMemory | pci::kCmdBusMaster)) != (pci::kCmdMemory | pci::kCmdBusMaster)) {
      problems.push_back("COMMAND " + hex4(*cmd) + " lacks Memory+BusMaster");
    }
    if (problems.empty()) {
      f.summary = "on vfio-pci, D0, power/control on, Memory+BusMaster";
    } else {
      f.severity = Severity::error;
      f.summary = "on vfio-pci but ";
      for (std::size_t i = 0; i < problems.size(); ++i) { f.summary += (i ? "; " : "") + problems[i]; }
      f.remediation = "Run `p2pnode apply` (writes power/control=on, confirms D0, sets Memory+BusMaster).";
    }
    out.push_back(std::move(f));
  }
  if (profile_wants && unmatched.empty() && on_vfio < wanted_vfio) {
    Finding f = make_finding("nvme.binding", "node", Severity::warning,
                             "the profile names " + std::to_string(wanted_vfio) + " drive(s) for vfio-pci; " +
                                 std::to_string(on_vfio) + " NVMe controller(s) are on vfio-pci");
    f.observed = {{"on_vfio_pci", on_vfio}};
    f.expected = {{"on_vfio_pci", wanted_vfio}};
    f.remediation = "Run `p2pnode plan` to see which drive and why (a drive in use is refused), then `p2pnode apply`.";
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace p2pnode::checks
