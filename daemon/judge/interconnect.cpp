#include "judge/interconnect.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/link_rate.hpp"
#include "nvidia/gpu_memory.hpp"

namespace p2pnode::judge {

Status merge_agent_interconnect(Inventory& inv, const nlohmann::json& doc) {
  using json = nlohmann::json;
  if (!doc.is_object()) { return Error{"the agent document is not a JSON object"}; }
  // Each GPU's own VRAM (devices[].memory_bytes, CUDA's totalGlobalMem), for rebar.aperture.
  if (const auto devs = doc.find("devices"); devs != doc.end() && devs->is_array()) {
    std::map<std::string, std::uint64_t> mem;
    for (const auto& d : *devs) {
      if (d.is_object() && d.contains("pci_bus_id") && d["pci_bus_id"].is_string() && d.contains("memory_bytes") &&
          d["memory_bytes"].is_number_unsigned()) {
        if (const auto bdf = nvidia::sysfs_bus_id(d["pci_bus_id"].get<std::string>()); !bdf.empty()) {
          mem[bdf] = d["memory_bytes"].get<std::uint64_t>();
        }
      }
    }
    if (!mem.empty()) {
      inv.gpu_memory = std::move(mem);
      inv.gpu_memory_source = "agent (self-test of " + doc.value("started_at", std::string("?")) + ")";
    }
  }
  auto ic = doc.find("interconnect");
  if (ic == doc.end()) { return {}; }
  if (!ic->is_object() || !ic->contains("source") || !(*ic)["source"].is_string()) {
    return Error{"interconnect.source: expected a string"};
  }
  const json devs = doc.value("devices", json::array());
  if (!devs.is_array()) { return Error{"devices: expected an array"}; }
  auto bdf = [&](const json& i, int& cc) -> std::string {
    if (!i.is_number_integer() || i.get<long long>() < 0 ||
        static_cast<std::size_t>(i.get<long long>()) >= devs.size()) {
      return {};
    }
    const json& d = devs[static_cast<std::size_t>(i.get<long long>())];
    if (!d.is_object() || !d.contains("pci_bus_id") || !d["pci_bus_id"].is_string()) { return {}; }
    cc = d.contains("compute_capability") && d["compute_capability"].is_string()
             ? std::atoi(d["compute_capability"].get<std::string>().c_str())
             : 0;
    return d["pci_bus_id"].get<std::string>();
  };
  std::vector<GpuInterconnect> out;
  const json pairs = ic->value("pairs", json::array());
  if (!pairs.is_array()) { return Error{"interconnect.pairs: expected an array"}; }
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const json& p = pairs[k];
    const std::string where = "interconnect.pairs[" + std::to_string(k) + "]";
    if (!p.is_object() || !p.contains("gpus") || !p["gpus"].is_array() || p["gpus"].size() != 2) {
      return Error{where + ".gpus: expected two device indices"};
    }
    int cc_a = 0, cc_b = 0;
    const std::string a = bdf(p["gpus"][0], cc_a), b = bdf(p["gpus"][1], cc_b);
    if (a.empty() || b.empty() || a == b) { return Error{where + ".gpus: not two of the document's devices"}; }
    if (!p.contains("nvlinks") || !p["nvlinks"].is_number_integer() || p["nvlinks"].get<long long>() < 0 ||
        p["nvlinks"].get<long long>() > 1024) {
      return Error{where + ".nvlinks: expected an integer from 0 to 1024"};
    }
    GpuInterconnect g;
    g.a = std::min(a, b);
    g.b = std::max(a, b);
    g.nvlinks = p["nvlinks"].get<int>();
    const json v = p.value("nvlink_version", json());
    if (g.nvlinks > 0 && v.is_number_integer() && v.get<long long>() >= 0 && v.get<long long>() <= 255) {
      g.nvlink_generation = nvlink_generation(v.get<unsigned>(), cc_a);
    }
    out.push_back(std::move(g));
  }
  const std::string source = (*ic)["source"].get<std::string>();
  const json reason = ic->value("reason", json());
  inv.interconnects = std::move(out);
  inv.interconnect_source =
      source == "nvml" ? "nvml (self-test of " + doc.value("started_at", std::string("?")) + ")"
                       : "none: " + (reason.is_string() ? reason.get<std::string>() : std::string("no reason given"));
  return {};
}

}  // namespace p2pnode::judge
