#include "pci/iommu.hpp"

#include <algorithm>
#include <sstream>

namespace p2pnode::pci {

std::vector<std::string> iommu_cmdline_args(std::string_view cmdline) {
  std::vector<std::string> out;
  std::istringstream ss{std::string(cmdline)};
  std::string arg;
  while (ss >> arg) {
    if (arg == "--") {
      break;  // what follows is for init, not the kernel
    }
    for (const char* p : {"intel_iommu=", "amd_iommu=", "iommu=", "iommu.passthrough=", "iommu.strict="}) {
      if (arg.rfind(p, 0) == 0) { out.push_back(arg); }
    }
  }
  return out;
}

namespace {
bool has_arg(const std::vector<std::string>& args, std::string_view prefix, std::string_view value) {
  for (const auto& a : args) {
    if (a.rfind(prefix, 0) != 0) { continue; }
    // intel_iommu=on,sm_on: any comma-separated option counts.
    std::string_view v = std::string_view(a).substr(prefix.size());
    std::size_t pos = 0;
    while (pos <= v.size()) {
      auto comma = v.find(',', pos);
      if (comma == std::string_view::npos) { comma = v.size(); }
      if (v.substr(pos, comma - pos) == value) { return true; }
      pos = comma + 1;
    }
  }
  return false;
}
}  // namespace

void decide_iommu_mode(IommuState& s) {
  s.evidence.clear();
  const auto& a = s.cmdline_args;
  const bool pt_arg = has_arg(a, "iommu=", "pt") || has_arg(a, "iommu.passthrough=", "1") ||
                      has_arg(a, "iommu.passthrough=", "on") || has_arg(a, "iommu.passthrough=", "y");
  const bool off_arg =
      has_arg(a, "intel_iommu=", "off") || has_arg(a, "amd_iommu=", "off") || has_arg(a, "iommu=", "off");
  std::string tables;
  for (const auto& t : s.acpi_tables) { tables += (tables.empty() ? "" : ", ") + t; }

  if (s.units.empty()) {
    s.mode = IommuMode::off;
    s.evidence.push_back("/sys/class/iommu has no IOMMU units");
    if (off_arg) { s.evidence.push_back("the kernel command line disables it"); }
    if (!tables.empty()) {
      s.evidence.push_back("the firmware describes one (ACPI " + tables + ") but the kernel did not enable it");
    }
    if (s.noiommu_groups) { s.evidence.push_back("vfio noiommu groups exist; they do not mean an IOMMU is on"); }
    return;
  }
  std::string units;
  for (const auto& u : s.units) { units += (units.empty() ? "" : ", ") + u; }
  s.evidence.push_back("IOMMU units in /sys/class/iommu: " + units);

  int identity = 0, dma = 0;
  for (const auto& [type, n] : s.group_types) {
    if (type == "identity") {
      identity += n;
    } else if (type.rfind("DMA", 0) == 0) {
      dma += n;
    }
  }
  if (identity + dma > 0) {
    s.evidence.push_back(std::to_string(identity) + " IOMMU groups in identity (passthrough) domains, " +
                         std::to_string(dma) + " in translating (DMA) domains");
    s.mode = dma == 0 ? IommuMode::passthrough : IommuMode::translating;
    return;
  }
  // No group types readable (older kernels): fall back to the command line.
  if (pt_arg) {
    s.mode = IommuMode::passthrough;
    s.evidence.push_back("the kernel command line asks for passthrough (iommu=pt)");
  } else {
    s.mode = IommuMode::translating;
    s.evidence.push_back("no passthrough argument on the kernel command line");
  }
}

}  // namespace p2pnode::pci
