#include "judge/gpu_info.hpp"

#include <algorithm>
#include <cctype>

namespace p2pnode::judge {

std::string nvml_bus_id(std::string_view bdf) {
  // domain:bus:device.function, with a domain of 4 or 8 hex digits.
  const auto colon = bdf.find(':');
  if (colon == std::string_view::npos || colon > 8 || bdf.size() - colon != 8) { return std::string(bdf); }
  for (char c : bdf) {
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') { return std::string(bdf); }
  }
  std::string out(8 - colon, '0');
  out.append(bdf);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

std::vector<GpuInfo> gpu_info(const nlohmann::json& device_gpus, const AgentResult* last, const std::string& hostname) {
  std::vector<std::string> bdfs;
  for (const auto& g : device_gpus) {
    if (!g.is_object() || !g.contains("bdf") || !g["bdf"].is_string()) { continue; }
    if (g.value("vendor_id", std::string("0x10de")) != "0x10de") {
      continue;  // NVML counts NVIDIA's only
    }
    bdfs.push_back(g["bdf"].get<std::string>());
  }
  // NVML numbers the GPUs in PCI bus order; the fixed-width NVML form sorts as the bus does.
  std::sort(bdfs.begin(), bdfs.end(),
            [](const std::string& a, const std::string& b) { return nvml_bus_id(a) < nvml_bus_id(b); });
  std::vector<GpuInfo> out;
  for (std::size_t i = 0; i < bdfs.size(); ++i) {
    GpuInfo info{bdfs[i], std::to_string(i), "", nvml_bus_id(bdfs[i]), hostname};
    if (last) {
      for (const auto& d : last->devices) {
        if (nvml_bus_id(d.pci_bus_id) == info.pci_bus_id) { info.uuid = d.uuid; }
      }
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace p2pnode::judge
