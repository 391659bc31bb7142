#include "health/agent_health.hpp"

#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/json_text.hpp"

namespace p2pnode::health {

namespace {
using json = nlohmann::json;
using Bad = std::function<Error(const std::string&)>;

// An optional count: absent or null is "not answered"; anything else must be a non-negative integer.
bool count(const json& o, const char* key, std::optional<std::uint64_t>& out) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) { return true; }
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<std::int64_t>() >= 0)) { return false; }
  out = it->get<std::uint64_t>();
  return true;
}
bool small(const json& o, const char* key, std::optional<unsigned>& out) {
  std::optional<std::uint64_t> v;
  if (!count(o, key, v) || (v && *v > 64)) {
    return false;  // a PCIe generation or width
  }
  if (v) { out = static_cast<unsigned>(*v); }
  return true;
}
bool flag(const json& o, const char* key, std::optional<bool>& out) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) { return true; }
  if (!it->is_boolean()) { return false; }
  out = it->get<bool>();
  return true;
}
bool word(const json& v) {  // a status or action name: lower case, digits, underscores, short
  if (!v.is_string() || v.get_ref<const std::string&>().empty() || v.get_ref<const std::string&>().size() > 40) {
    return false;
  }
  for (const char c : v.get_ref<const std::string&>()) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) { return false; }
  }
  return true;
}

// Schema 2's per-GPU driver state.
std::optional<Error> driver_state(const json& g, const std::string& at, AgentGpuReading& gr, const Bad& bad) {
  const auto ra = g.find("recovery_action");
  if (ra == g.end()) { return bad(at + ".recovery_action missing"); }
  if (!ra->is_null() && !word(*ra)) { return bad(at + ".recovery_action is not an action name"); }
  if (ra->is_string()) { gr.recovery_action = ra->get<std::string>(); }
  if (const auto rp = g.find("recovery_problem"); rp != g.end() && rp->is_string()) {
    gr.recovery_problem = rp->get<std::string>();
  }
  const auto pcie = g.find("pcie");
  if (pcie == g.end() || !pcie->is_object()) { return bad(at + ".pcie missing or not an object"); }
  auto& p = gr.pcie;
  if (!count(*pcie, "replay", p.replay) || !count(*pcie, "replay_rollover", p.replay_rollover)) {
    return bad(at + ".pcie: a replay counter is not a count");
  }
  if (!small(*pcie, "gen", p.gen) || !small(*pcie, "max_gen", p.max_gen) || !small(*pcie, "width", p.width) ||
      !small(*pcie, "max_width", p.max_width)) {
    return bad(at + ".pcie: a link generation or width is out of range");
  }
  const auto mem = g.find("memory");
  if (mem == g.end() || !mem->is_object()) { return bad(at + ".memory missing or not an object"); }
  auto& m = gr.memory;
  if (!count(*mem, "remapped_correctable", m.remapped_correctable) ||
      !count(*mem, "remapped_uncorrectable", m.remapped_uncorrectable) ||
      !count(*mem, "volatile_uncorrected_ecc", m.volatile_uncorrected)) {
    return bad(at + ".memory: a count is not a count");
  }
  if (!flag(*mem, "remap_pending", m.remap_pending) || !flag(*mem, "remap_failure", m.remap_failure)) {
    return bad(at + ".memory: remap_pending or remap_failure is not a boolean");
  }
  return std::nullopt;
}
}  // namespace

Result<AgentReading> decode_agent_health(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) { return Error{"the agent's health output is not a JSON object"}; }
  const Bad bad = [](const std::string& what) { return Error{"the agent's health document: " + what}; };
  if (!j.contains("schema_version") || !j["schema_version"].is_number_integer()) {
    return bad("schema_version missing or not an integer");
  }
  const int version = j["schema_version"].get<int>();
  if (version != 1 && version != kAgentHealthSchemaVersion) {
    return bad("schema_version " + json_text(j["schema_version"]) + ", expected 1 or " +
               std::to_string(kAgentHealthSchemaVersion));
  }
  if (!j.contains("nvml") || !j["nvml"].is_object()) { return bad("nvml missing or not an object"); }
  const json& nvml = j["nvml"];
  AgentReading r;
  if (!nvml.contains("available") || !nvml["available"].is_boolean()) {
    return bad("nvml.available missing or not a boolean");
  }
  if (nvml.contains("driver_version") && nvml["driver_version"].is_string()) {
    r.driver_version = nvml["driver_version"];
  }
  if (!nvml["available"].get<bool>()) {
    r.skipped = nvml.contains("reason") && nvml["reason"].is_string() ? nvml["reason"].get<std::string>()
                                                                      : std::string("NVML not available");
    return r;
  }
  if (!j.contains("gpus") || !j["gpus"].is_array()) { return bad("gpus missing or not an array"); }
  for (std::size_t i = 0; i < j["gpus"].size(); ++i) {
    const json& g = j["gpus"][i];
    const std::string at = "gpus[" + std::to_string(i) + "]";
    if (!g.is_object() || !g.contains("pci_bus_id") || !g["pci_bus_id"].is_string()) {
      return bad(at + ".pci_bus_id missing");
    }
    AgentGpuReading gr;
    gr.gpu = g["pci_bus_id"];
    if (g.contains("problem") && g["problem"].is_string()) { gr.problem = g["problem"]; }
    if (!g.contains("links") || !g["links"].is_array()) { return bad(at + ".links missing or not an array"); }
    for (std::size_t k = 0; k < g["links"].size(); ++k) {
      const json& l = g["links"][k];
      const std::string lat = at + ".links[" + std::to_string(k) + "]";
      if (!l.is_object() || !l.contains("link") || !l["link"].is_number_integer()) {
        return bad(lat + ".link missing");
      }
      if (!l.contains("active") || !l["active"].is_boolean()) { return bad(lat + ".active missing or not a boolean"); }
      NvlinkLinkReading lr;
      lr.link = l["link"];
      lr.active = l["active"];
      if (l.contains("remote_pci_bus_id") && l["remote_pci_bus_id"].is_string()) { lr.remote = l["remote_pci_bus_id"]; }
      if (!l.contains("errors") || !l["errors"].is_object()) { return bad(lat + ".errors missing or not an object"); }
      for (const char* name : kNvlinkCounters) {
        const auto it = l["errors"].find(name);
        if (it == l["errors"].end() || it->is_null()) {
          lr.errors[name] = std::nullopt;
        } else if (it->is_number_unsigned() || (it->is_number_integer() && it->get<std::int64_t>() >= 0)) {
          lr.errors[name] = it->get<std::uint64_t>();
        } else {
          return bad(lat + ".errors." + name + " is not a count");
        }
      }
      gr.links.push_back(std::move(lr));
    }
    if (version >= 2) {
      if (auto e = driver_state(g, at, gr, bad)) { return *e; }
    }
    r.gpus.push_back(std::move(gr));
  }
  if (version >= 2) {
    r.driver_state = true;
    const auto p2p = j.find("p2p_status");
    if (p2p == j.end() || !p2p->is_array()) { return bad("p2p_status missing or not an array"); }
    if (p2p->size() > 64 * 63) {
      return bad("p2p_status has " + std::to_string(p2p->size()) + " pairs; at most 64 GPUs are read");
    }
    for (std::size_t i = 0; i < p2p->size(); ++i) {
      const json& e = (*p2p)[i];
      const std::string at = "p2p_status[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("gpu") || !e["gpu"].is_string() || !e.contains("peer_gpu") ||
          !e["peer_gpu"].is_string()) {
        return bad(at + ": gpu or peer_gpu missing");
      }
      P2pStatusReading pr;
      pr.gpu = e["gpu"];
      pr.peer = e["peer_gpu"];
      for (const char* cap : kP2pCaps) {
        const auto it = e.find(cap);
        if (it == e.end() || it->is_null()) {
          pr.caps[cap] = std::nullopt;
        } else if (word(*it)) {
          pr.caps[cap] = it->get<std::string>();
        } else {
          return bad(at + "." + cap + " is not a status name");
        }
      }
      r.p2p.push_back(std::move(pr));
    }
  }
  r.read = true;
  return r;
}

}  // namespace p2pnode::health
