#include "p2pnode/agent/health.hpp"

#include <dlfcn.h>

#include <cstring>
#include <iostream>
#include <string_view>

#include "p2pnode/agent/interconnect.hpp"

namespace p2pnode::agent {

namespace {
// The NVML types used, as nvml.h declares them (ABI stable since driver 346; the error counters since 361).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr int kSuccess = 0;
constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

struct Nvml {
  void* lib = nullptr;
  bool inited = false;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*link_remote)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*error_counter)(nvmlDevice_t, unsigned, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;

  ~Nvml() {
    if (lib) {
      if (inited && shutdown) shutdown();
      dlclose(lib);
    }
  }
  template <typename F>
  bool sym(F& f, const char* s) {
    f = reinterpret_cast<F>(dlsym(lib, s));
    return f != nullptr;
  }
  std::string err(nvmlReturn_t r) const {
    return error_string ? std::string(error_string(r)) + " (" + std::to_string(r) + ")" : "error " + std::to_string(r);
  }
};
}  // namespace

HealthReport read_health(const char* library) {
  HealthReport rep;
  Nvml n;
  n.lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!n.lib) {
    const char* e = dlerror();
    rep.reason = std::string("NVML not available: ") + (e ? e : std::string(library) + " not found");
    return rep;
  }
  const bool ok = n.sym(n.init, "nvmlInit_v2") && n.sym(n.shutdown, "nvmlShutdown") &&
                  n.sym(n.error_string, "nvmlErrorString") && n.sym(n.count, "nvmlDeviceGetCount_v2") &&
                  n.sym(n.by_index, "nvmlDeviceGetHandleByIndex_v2") && n.sym(n.pci_info, "nvmlDeviceGetPciInfo_v3") &&
                  n.sym(n.link_state, "nvmlDeviceGetNvLinkState");
  if (!ok) {
    const char* e = dlerror();
    rep.reason = std::string("NVML lacks a function the health mode needs (") + (e ? e : "dlsym") + ")";
    return rep;
  }
  n.sym(n.name, "nvmlDeviceGetName");
  n.sym(n.link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  n.sym(n.error_counter, "nvmlDeviceGetNvLinkErrorCounter");
  n.sym(n.driver_version, "nvmlSystemGetDriverVersion");
  if (const auto r = n.init(); r != kSuccess) {
    rep.reason = "nvmlInit failed: " + n.err(r);
    return rep;
  }
  n.inited = true;
  char ver[96] = {};
  if (n.driver_version && n.driver_version(ver, sizeof ver) == kSuccess) rep.driver_version = ver;
  unsigned count = 0;
  if (const auto r = n.count(&count); r != kSuccess) {
    rep.reason = "nvmlDeviceGetCount failed: " + n.err(r);
    return rep;
  }
  rep.available = true;
  for (unsigned i = 0; i < count; ++i) {
    GpuHealth g;
    g.index = i;
    nvmlDevice_t dev = nullptr;
    if (const auto r = n.by_index(i, &dev); r != kSuccess) {
      g.problem = "nvmlDeviceGetHandleByIndex failed: " + n.err(r);  // e.g. a GPU that fell off the bus
      rep.gpus.push_back(std::move(g));
      continue;
    }
    nvmlPciInfo_t pci;
    std::memset(&pci, 0, sizeof pci);
    if (const auto r = n.pci_info(dev, &pci); r == kSuccess) g.pci_bus_id = normalize_bus_id(pci.busId);
    else g.problem = "nvmlDeviceGetPciInfo failed: " + n.err(r);
    char name[96] = {};
    if (n.name && n.name(dev, name, sizeof name) == kSuccess) g.name = name;
    for (unsigned l = 0; l < kMaxLinks; ++l) {
      int active = 0;
      if (n.link_state(dev, l, &active) != kSuccess) continue;  // not a link this GPU has
      NvlinkHealth h;
      h.link = l;
      h.active = active != 0;
      nvmlPciInfo_t remote;
      std::memset(&remote, 0, sizeof remote);
      if (h.active && n.link_remote && n.link_remote(dev, l, &remote) == kSuccess)
        h.remote_pci_bus_id = normalize_bus_id(remote.busId);
      for (int c = 0; c < 5; ++c) {
        unsigned long long v = 0;
        if (n.error_counter && n.error_counter(dev, l, c, &v) == kSuccess) h.errors[c] = v;
      }
      g.links.push_back(std::move(h));
    }
    rep.gpus.push_back(std::move(g));
  }
  return rep;
}

nlohmann::json health_json(const HealthReport& r, const std::string& agent_version) {
  using json = nlohmann::json;
  json gpus = json::array();
  for (const auto& g : r.gpus) {
    json links = json::array();
    for (const auto& l : g.links) {
      json errors = json::object();
      for (int c = 0; c < 5; ++c) errors[kNvlinkErrorNames[c]] = l.errors[c] ? json(*l.errors[c]) : json(nullptr);
      links.push_back({{"link", l.link},
                       {"active", l.active},
                       {"remote_pci_bus_id", l.remote_pci_bus_id.empty() ? json(nullptr) : json(l.remote_pci_bus_id)},
                       {"errors", errors}});
    }
    gpus.push_back({{"index", g.index},
                    {"pci_bus_id", g.pci_bus_id},
                    {"name", g.name},
                    {"problem", g.problem.empty() ? json(nullptr) : json(g.problem)},
                    {"links", links}});
  }
  return {{"schema_version", kHealthSchemaVersion},
          {"kind", "health"},
          {"agent_version", agent_version},
          {"nvml",
           {{"available", r.available},
            {"driver_version", r.driver_version.empty() ? json(nullptr) : json(r.driver_version)},
            {"reason", r.reason.empty() ? json(nullptr) : json(r.reason)}}},
          {"gpus", gpus}};
}

bool wants_health(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--health") return true;
  return false;
}

int run_health(int argc, char** argv, const std::string& agent_version, const char* library) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--health" || a == "--json") continue;
    std::cerr << "p2pnode-agent --health: unexpected argument '" << a
              << "'; usage: p2pnode-agent --health [--json] (NVML only: link state and error counters per GPU)\n";
    return 2;
  }
  const HealthReport r = read_health(library);
  std::cout << health_json(r, agent_version).dump(2) << "\n";
  // NVML missing is an answer, not a failure: the daemon reports the reason.
  return 0;
}

}  // namespace p2pnode::agent
