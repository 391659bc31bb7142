#include "p2pnode/agent/nvml.hpp"

#include "nvml_lib.hpp"

#include <cstring>

namespace p2pnode::agent {

namespace {
using nvml::Device;
using nvml::kMaxLinks;
using nvml::kSuccess;
using nvml::PciInfo;
using nvml::Return;
enum CapsIndex { kRead = 0, kWrite = 1, kNvlink = 2, kAtomics = 3 };

// The entry points the interconnect reader needs beyond init and shutdown.
struct LinkCalls {
  Return (*by_bus_id)(const char*, Device*) = nullptr;
  Return (*link_state)(Device, unsigned, int*) = nullptr;
  Return (*link_version)(Device, unsigned, unsigned*) = nullptr;
  Return (*link_remote)(Device, unsigned, PciInfo*) = nullptr;
  Return (*p2p_status)(Device, Device, int, int*) = nullptr;
  Return (*driver_version)(char*, unsigned) = nullptr;
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
  nvml::Lib n;
  if (auto why = n.open(library); !why.empty()) { return none(why); }
  LinkCalls c;
  const bool ok =
      n.sym(c.by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") && n.sym(c.link_state, "nvmlDeviceGetNvLinkState") &&
      n.sym(c.link_version, "nvmlDeviceGetNvLinkVersion") &&
      n.sym(c.link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2") && n.sym(c.p2p_status, "nvmlDeviceGetP2PStatus");
  n.sym(c.driver_version, "nvmlSystemGetDriverVersion");
  if (!ok) { return none(nvml::Lib::missing("the agent")); }
  if (auto why = n.init(); !why.empty()) { return none(why); }
  char ver[96] = {};
  if (c.driver_version && c.driver_version(ver, sizeof ver) == kSuccess) { ic.nvml_driver_version = ver; }
  std::vector<Device> dev(bus_ids.size(), nullptr);
  for (std::size_t i = 0; i < bus_ids.size(); ++i) {
    if (const auto r = c.by_bus_id(bus_ids[i].c_str(), &dev[i]); r != kSuccess) {
      return none("NVML does not know GPU " + std::to_string(i) + " (" + bus_ids[i] + "): " + n.err(r));
    }
  }
  std::vector<std::vector<NvLinkRecord>> links(bus_ids.size());
  for (std::size_t i = 0; i < dev.size(); ++i) {
    for (unsigned l = 0; l < kMaxLinks; ++l) {
      int active = 0;
      if (c.link_state(dev[i], l, &active) != kSuccess || active == 0) {
        continue;  // absent or down
      }
      NvLinkRecord rec;
      rec.link = l;
      c.link_version(dev[i], l, &rec.version);
      PciInfo pci;
      std::memset(&pci, 0, sizeof pci);
      if (c.link_remote(dev[i], l, &pci) == kSuccess) { rec.remote_bus_id = normalize_bus_id(pci.busId); }
      links[i].push_back(std::move(rec));
    }
  }
  auto status = [&](int a, int b, int cap) {
    int s = 6;
    if (c.p2p_status(dev[static_cast<std::size_t>(a)], dev[static_cast<std::size_t>(b)], cap, &s) != kSuccess) {
      s = 6;
    }
    return s;
  };
  ic.source = "nvml";
  ic.pairs = pairs_from_links(bus_ids, links, [&](int a, int b) { return status(a, b, kNvlink) == 0; });
  for (auto& p : ic.pairs) {
    for (const auto& [name, cap] :
         {std::pair{"read", kRead}, {"write", kWrite}, {"nvlink", kNvlink}, {"atomics", kAtomics}}) {
      p.p2p_status.emplace_back(name, p2p_status_name(status(p.a, p.b, cap)));
    }
  }
  return ic;
}

}  // namespace p2pnode::agent
