#include "health/agent_health.hpp"

#include <nlohmann/json.hpp>

namespace p2pnode::health {

namespace {
using json = nlohmann::json;
}

Result<NvlinkReading> decode_agent_health(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{"the agent's health output is not a JSON object"};
  auto bad = [](const std::string& what) { return Error{"the agent's health document: " + what}; };
  if (!j.contains("schema_version") || !j["schema_version"].is_number_integer())
    return bad("schema_version missing or not an integer");
  if (j["schema_version"].get<int>() != kAgentHealthSchemaVersion)
    return bad("schema_version " + j["schema_version"].dump() + ", expected " + std::to_string(kAgentHealthSchemaVersion));
  if (!j.contains("nvml") || !j["nvml"].is_object()) return bad("nvml missing or not an object");
  const json& nvml = j["nvml"];
  NvlinkReading r;
  if (!nvml.contains("available") || !nvml["available"].is_boolean()) return bad("nvml.available missing or not a boolean");
  if (nvml.contains("driver_version") && nvml["driver_version"].is_string()) r.driver_version = nvml["driver_version"];
  if (!nvml["available"].get<bool>()) {
    r.skipped = nvml.contains("reason") && nvml["reason"].is_string() ? nvml["reason"].get<std::string>()
                                                                         : std::string("NVML not available");
    return r;
  }
  if (!j.contains("gpus") || !j["gpus"].is_array()) return bad("gpus missing or not an array");
  for (std::size_t i = 0; i < j["gpus"].size(); ++i) {
    const json& g = j["gpus"][i];
    const std::string at = "gpus[" + std::to_string(i) + "]";
    if (!g.is_object() || !g.contains("pci_bus_id") || !g["pci_bus_id"].is_string()) return bad(at + ".pci_bus_id missing");
    NvlinkGpuReading gr;
    gr.gpu = g["pci_bus_id"];
    if (g.contains("problem") && g["problem"].is_string()) gr.problem = g["problem"];
    if (!g.contains("links") || !g["links"].is_array()) return bad(at + ".links missing or not an array");
    for (std::size_t k = 0; k < g["links"].size(); ++k) {
      const json& l = g["links"][k];
      const std::string lat = at + ".links[" + std::to_string(k) + "]";
      if (!l.is_object() || !l.contains("link") || !l["link"].is_number_integer()) return bad(lat + ".link missing");
      if (!l.contains("active") || !l["active"].is_boolean()) return bad(lat + ".active missing or not a boolean");
      NvlinkLinkReading lr;
      lr.link = l["link"];
      lr.active = l["active"];
      if (l.contains("remote_pci_bus_id") && l["remote_pci_bus_id"].is_string()) lr.remote = l["remote_pci_bus_id"];
      if (!l.contains("errors") || !l["errors"].is_object()) return bad(lat + ".errors missing or not an object");
      for (const char* name : kNvlinkCounters) {
        const auto it = l["errors"].find(name);
        if (it == l["errors"].end() || it->is_null()) lr.errors[name] = std::nullopt;
        else if (it->is_number_unsigned() || (it->is_number_integer() && it->get<std::int64_t>() >= 0))
          lr.errors[name] = it->get<std::uint64_t>();
        else return bad(lat + ".errors." + name + " is not a count");
      }
      gr.links.push_back(std::move(lr));
    }
    r.gpus.push_back(std::move(gr));
  }
  r.read = true;
  return r;
}

}  // namespace p2pnode::health
