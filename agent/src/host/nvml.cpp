#include "p2pnode/agent/nvml.hpp"

#include <dlfcn.h>

#include <cstring>

namespace p2pnode::agent {

namespace {
// The few NVML types used, as nvml.h declares them (ABI stable since NVML 2.285 / driver 346).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};
constexpr int kSuccess = 0;
constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
enum CapsIndex { kRead = 0, kWrite = 1, kNvlink = 2, kAtomics = 3 };

struct Nvml {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*link_version)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*link_remote)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*p2p_status)(nvmlDevice_t, nvmlDevice_t, int, int*) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;

  ~Nvml() {
    if (lib) {
      if (shutdown && init) shutdown();
      dlclose(lib);
    }
  }
  template <typename F>
  bool sym(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    return f != nullptr;
  }
  std::string err(nvmlReturn_t r) const {
    return error_string ? std::string(error_string(r)) + " (" + std::to_string(r) + ")" : "error " + std::to_string(r);
  }
};
}  // namespace

Interconnect read_interconnect(const std::vector<std::string>& bus_ids, const char* library) {
  Interconnect ic;
  auto none = [&](std::string why) {
    ic.source = "none";
    ic.reason = std::move(why) + "; PCIe assumed for every pair";
    ic.pairs.clear();
    return ic;
  };
  Nvml n;
  n.lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!n.lib) {
    const char* e = dlerror();
    return none(std::string("NVML not available: ") + (e ? e : std::string(library) + " not found"));
  }
  const bool ok = n.sym(n.init, "nvmlInit_v2") && n.sym(n.shutdown, "nvmlShutdown") &&
                  n.sym(n.error_string, "nvmlErrorString") && n.sym(n.by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") &&
                  n.sym(n.link_state, "nvmlDeviceGetNvLinkState") && n.sym(n.link_version, "nvmlDeviceGetNvLinkVersion") &&
                  n.sym(n.link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2") &&
                  n.sym(n.p2p_status, "nvmlDeviceGetP2PStatus");
  n.sym(n.driver_version, "nvmlSystemGetDriverVersion");
  if (!ok) {
    n.init = nullptr;
    return none("NVML lacks a function the agent needs (" + std::string(dlerror() ? dlerror() : "dlsym") + ")");
  }
  if (const auto r = n.init(); r != kSuccess) {
    n.init = nullptr;  // nothing to shut down
    return none("nvmlInit failed: " + n.err(r));
  }
  char ver[96] = {};
  if (n.driver_version && n.driver_version(ver, sizeof ver) == kSuccess) ic.nvml_driver_version = ver;
  std::vector<nvmlDevice_t> dev(bus_ids.size(), nullptr);
  for (std::size_t i = 0; i < bus_ids.size(); ++i) {
    if (const auto r = n.by_bus_id(bus_ids[i].c_str(), &dev[i]); r != kSuccess)
      return none("NVML does not know GPU " + std::to_string(i) + " (" + bus_ids[i] + "): " + n.err(r));
  }
  std::vector<std::vector<NvLinkRecord>> links(bus_ids.size());
  for (std::size_t i = 0; i < dev.size(); ++i) {
    for (unsigned l = 0; l < kMaxLinks; ++l) {
      int active = 0;
      if (n.link_state(dev[i], l, &active) != kSuccess || active == 0) continue;  // absent or down
      NvLinkRecord rec;
      rec.link = l;
      n.link_version(dev[i], l, &rec.version);
      nvmlPciInfo_t pci;
      std::memset(&pci, 0, sizeof pci);
      if (n.link_remote(dev[i], l, &pci) == kSuccess) rec.remote_bus_id = normalize_bus_id(pci.busId);
      links[i].push_back(std::move(rec));
    }
  }
  auto status = [&](int a, int b, int cap) {
    int s = 6;
    if (n.p2p_status(dev[static_cast<std::size_t>(a)], dev[static_cast<std::size_t>(b)], cap, &s) != kSuccess) s = 6;
    return s;
  };
  ic.source = "nvml";
  ic.pairs = pairs_from_links(bus_ids, links, [&](int a, int b) { return status(a, b, kNvlink) == 0; });
  for (auto& p : ic.pairs) {
    for (const auto& [name, cap] : {std::pair{"read", kRead}, {"write", kWrite}, {"nvlink", kNvlink}, {"atomics", kAtomics}})
      p.p2p_status.emplace_back(name, p2p_status_name(status(p.a, p.b, cap)));
  }
  return ic;
}

}  // namespace p2pnode::agent
