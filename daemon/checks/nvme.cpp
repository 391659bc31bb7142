// nvme.binding: the NVMe controllers the seed binds to vfio-pci by hand, as the kernel shows them.
// The trap it exists for: vfio-pci (>= 5.19) lets an idle device fall to D3hot, where BAR0 reads
// all-Fs; a drive on vfio-pci must be D0 with power/control "on" and Memory+BusMaster set.
#include "core/hex.hpp"
#include <cstdio>

#include "checks/check.hpp"
#include "pci/config_space.hpp"

namespace p2pnode::checks {

std::vector<Finding> check_nvme_binding(const Profile& p, const Inventory& inv) {
  std::vector<Finding> out;
  const bool profile_wants = p.nvme && !p.nvme->drives.empty();
  std::size_t wanted_vfio = 0, on_vfio = 0;
  if (profile_wants)
    for (const auto& d : p.nvme->drives) wanted_vfio += d.driver == "vfio-pci";
  for (const PciDevice* d : inv.nvme_controllers()) {
    const bool vfio = d->driver == "vfio-pci";
    on_vfio += vfio;
    if (!vfio && !profile_wants) continue;
    const auto pm = pci::decode_pm_state(d->config);
    const auto cmd = pci::decode_command(d->config);
    Finding f = make_finding("nvme.binding", d->bdf, Severity::ok, "");
    f.observed = {{"driver", d->driver.empty() ? "none" : d->driver}, {"power_state", d->power_state},
                  {"power_control", d->power_control},
                  {"pmcsr", pm ? nlohmann::json("D" + std::to_string(*pm)) : nlohmann::json(nullptr)},
                  {"command", cmd ? nlohmann::json(hex4(*cmd)) : nlohmann::json(nullptr)}};
    if (!vfio) {
      f.summary = "on " + (d->driver.empty() ? std::string("no driver") : d->driver);
      out.push_back(std::move(f));
      continue;
    }
    f.expected = {{"power_state", "D0"}, {"power_control", "on"}, {"command", "Memory+BusMaster"}};
    std::vector<std::string> problems;
    const bool d0 = pm ? *pm == 0 : d->power_state == "D0";
    if (!d0) problems.push_back("in " + (pm ? "D" + std::to_string(*pm) : d->power_state) + " (BAR0 reads all-Fs there)");
    if (d->power_control != "on") problems.push_back("power/control is " + d->power_control + " (it will drop to D3hot when idle)");
    if (cmd && (*cmd & (pci::kCmdMemory | pci::kCmdBusMaster)) != (pci::kCmdMemory | pci::kCmdBusMaster))
      problems.push_back("COMMAND " + hex4(*cmd) + " lacks Memory+BusMaster");
    if (problems.empty()) {
      f.summary = "on vfio-pci, D0, power/control on, Memory+BusMaster";
    } else {
      f.severity = Severity::error;
      f.summary = "on vfio-pci but ";
      for (std::size_t i = 0; i < problems.size(); ++i) f.summary += (i ? "; " : "") + problems[i];
      f.remediation = "Run `p2pnode apply` (writes power/control=on, confirms D0, sets Memory+BusMaster).";
    }
    out.push_back(std::move(f));
  }
  if (profile_wants && on_vfio < wanted_vfio) {
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
