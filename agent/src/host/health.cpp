#include "p2pnode/agent/health.hpp"

#include <cstring>
#include <iostream>
#include <string_view>

#include "driver_state.hpp"
#include "nvml_lib.hpp"
#include "p2pnode/agent/interconnect.hpp"

namespace p2pnode::agent {

namespace {
using nvml::Device;
using nvml::kMaxLinks;
using nvml::kSuccess;
using nvml::PciInfo;
using nvml::Return;

// The entry points the health reader needs (the NVLink error counters since driver 361).
struct HealthCalls {
  Return (*count)(unsigned*) = nullptr;
  Return (*by_index)(unsigned, Device*) = nullptr;
  Return (*pci_info)(Device, PciInfo*) = nullptr;
  Return (*name)(Device, char*, unsigned) = nullptr;
  Return (*link_state)(Device, unsigned, int*) = nullptr;
  Return (*link_remote)(Device, unsigned, PciInfo*) = nullptr;
  Return (*error_counter)(Device, unsigned, int, unsigned long long*) = nullptr;
  Return (*driver_version)(char*, unsigned) = nullptr;
};
}  // namespace

HealthReport read_health(const char* library) {
  HealthReport rep;
  nvml::Lib n;
  if (auto why = n.open(library); !why.empty()) {
    rep.reason = why;
    return rep;
  }
  HealthCalls calls;
  const bool ok =
      n.sym(calls.count, "nvmlDeviceGetCount_v2") && n.sym(calls.by_index, "nvmlDeviceGetHandleByIndex_v2") &&
      n.sym(calls.pci_info, "nvmlDeviceGetPciInfo_v3") && n.sym(calls.link_state, "nvmlDeviceGetNvLinkState");
  if (!ok) {
    rep.reason = nvml::Lib::missing("the health mode");
    return rep;
  }
  n.sym(calls.name, "nvmlDeviceGetName");
  n.sym(calls.link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  n.sym(calls.error_counter, "nvmlDeviceGetNvLinkErrorCounter");
  n.sym(calls.driver_version, "nvmlSystemGetDriverVersion");
  DriverCalls driver;
  driver.resolve(n);
  if (auto why = n.init(); !why.empty()) {
    rep.reason = why;
    return rep;
  }
  char ver[96] = {};
  if (calls.driver_version && calls.driver_version(ver, sizeof ver) == kSuccess) { rep.driver_version = ver; }
  unsigned count = 0;
  if (const auto r = calls.count(&count); r != kSuccess) {
    rep.reason = "nvmlDeviceGetCount failed: " + n.err(r);
    return rep;
  }
  rep.available = true;
  std::vector<Device> devs(count, nullptr);
  for (unsigned i = 0; i < count; ++i) {
    GpuHealth g;
    g.index = i;
    Device dev = nullptr;
    if (const auto r = calls.by_index(i, &dev); r != kSuccess) {
      g.problem = "nvmlDeviceGetHandleByIndex failed: " + n.err(r);  // e.g. a GPU that fell off the bus
      rep.gpus.push_back(std::move(g));
      continue;
    }
    devs[i] = dev;
    read_driver_state(n, driver, dev, g);
    PciInfo pci;
    std::memset(&pci, 0, sizeof pci);
    if (const auto r = calls.pci_info(dev, &pci); r == kSuccess) {
      g.pci_bus_id = normalize_bus_id(pci.busId);
    } else {
      g.problem = "nvmlDeviceGetPciInfo failed: " + n.err(r);
    }
    char name[96] = {};
    if (calls.name && calls.name(dev, name, sizeof name) == kSuccess) { g.name = name; }
    for (unsigned l = 0; l < kMaxLinks; ++l) {
      int active = 0;
      if (calls.link_state(dev, l, &active) != kSuccess) {
        continue;  // not a link this GPU has
      }
      NvlinkHealth h;
      h.link = l;
      h.active = active != 0;
      PciInfo remote;
      std::memset(&remote, 0, sizeof remote);
      if (h.active && calls.link_remote && calls.link_remote(dev, l, &remote) == kSuccess) {
        h.remote_pci_bus_id = normalize_bus_id(remote.busId);
      }
      g.links.push_back(std::move(h));
    }
    // Replay, recovery and flit CRC of every link in one field-values call (each NVML call is a driver
    // round trip of about 1 ms: 18 links x 5 counters one by one cost 80 ms a GPU); what it does not
    // answer, and the data CRC and ECC counters, one by one.
    read_link_counters(driver, dev, g.links);
    for (auto& h : g.links) {
      for (int c = 0; c < 5; ++c) {
        unsigned long long v = 0;
        if (!h.errors[c] && calls.error_counter && calls.error_counter(dev, h.link, c, &v) == kSuccess) {
          h.errors[c] = v;
        }
      }
    }
    rep.gpus.push_back(std::move(g));
  }
  rep.p2p = read_p2p_status(driver, devs);
  return rep;
}

nlohmann::json health_json(const HealthReport& r, const std::string& agent_version) {
  using json = nlohmann::json;
  json gpus = json::array();
  for (const auto& g : r.gpus) {
    json links = json::array();
    for (const auto& l : g.links) {
      json errors = json::object();
      for (int c = 0; c < 5; ++c) { errors[kNvlinkErrorNames[c]] = l.errors[c] ? json(*l.errors[c]) : json(nullptr); }
      links.push_back({{"link", l.link},
                       {"active", l.active},
                       {"remote_pci_bus_id", l.remote_pci_bus_id.empty() ? json(nullptr) : json(l.remote_pci_bus_id)},
                       {"errors", errors}});
    }
    auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
    gpus.push_back(
        {{"index", g.index},
         {"pci_bus_id", g.pci_bus_id},
         {"name", g.name},
         {"problem", g.problem.empty() ? json(nullptr) : json(g.problem)},
         {"links", links},
         {"recovery_action", g.recovery_action ? json(recovery_action_name(*g.recovery_action)) : json(nullptr)},
         {"recovery_problem", g.recovery_problem.empty() ? json(nullptr) : json(g.recovery_problem)},
         {"pcie",
          {{"replay", opt(g.pcie.replay)},
           {"replay_rollover", opt(g.pcie.replay_rollover)},
           {"gen", opt(g.pcie.gen)},
           {"max_gen", opt(g.pcie.max_gen)},
           {"width", opt(g.pcie.width)},
           {"max_width", opt(g.pcie.max_width)}}},
         {"memory",
          {{"remapped_correctable", opt(g.memory.remapped_correctable)},
           {"remapped_uncorrectable", opt(g.memory.remapped_uncorrectable)},
           {"remap_pending", opt(g.memory.remap_pending)},
           {"remap_failure", opt(g.memory.remap_failure)},
           {"volatile_uncorrected_ecc", opt(g.memory.volatile_uncorrected)}}}});
  }
  json p2p = json::array();
  for (const auto& p : r.p2p) {
    json e = {{"gpu", r.gpus[p.gpu].pci_bus_id}, {"peer_gpu", r.gpus[p.peer].pci_bus_id}};
    for (int c = 0; c < 5; ++c) {
      e[kP2pCapNames[c]] = p.status[c] ? json(p2p_status_name(*p.status[c])) : json(nullptr);
    }
    p2p.push_back(std::move(e));
  }
  return {{"schema_version", kHealthSchemaVersion},
          {"kind", "health"},
          {"agent_version", agent_version},
          {"nvml",
           {{"available", r.available},
            {"driver_version", r.driver_version.empty() ? json(nullptr) : json(r.driver_version)},
            {"reason", r.reason.empty() ? json(nullptr) : json(r.reason)}}},
          {"gpus", gpus},
          {"p2p_status", p2p}};
}

bool wants_health(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--health") { return true; }
  }
  return false;
}

int run_health(int argc, char** argv, const std::string& agent_version, const char* library) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--health" || a == "--json") { continue; }
    std::cerr
        << "p2pnode-agent --health: unexpected argument '" << a
        << "'; usage: p2pnode-agent --health [--json] (NVML only: links, recovery action, PCIe, memory, P2P status)\n";
    return 2;
  }
  const HealthReport r = read_health(library);
  std::cout << health_json(r, agent_version).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  // NVML missing is an answer, not a failure: the daemon reports the reason.
  return 0;
}

}  // namespace p2pnode::agent
