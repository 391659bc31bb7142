#include "health/paths.hpp"

#include "pci/topology.hpp"

namespace p2pnode::health {

namespace {
PciDevice as_device(const Endpoint& e) {
  PciDevice d;
  d.bdf = e.bdf;
  d.upstream = e.upstream;
  d.root_complex = e.root_complex;
  d.numa_node = e.numa_node;
  return d;
}
}  // namespace

PathIndex index_paths(const std::vector<Endpoint>& endpoints) {
  PathIndex x;
  auto add_device = [&](const std::string& bdf, const std::string& kind) {
    if (x.kind.emplace(bdf, kind).second) { x.devices.push_back(bdf); }
  };
  for (const auto& e : endpoints) { add_device(e.bdf, e.kind); }
  for (const auto& e : endpoints) {
    x.endpoints[e.bdf].insert(e.bdf);
    if (e.kind == "gpu") {
      x.idle_links.insert(e.bdf);
      if (!e.upstream.empty()) { x.idle_links.insert(e.upstream.back()); }
    }
    for (const auto& b : e.upstream) {
      add_device(b, "bridge");
      x.endpoints[b].insert(e.bdf);
    }
  }
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    for (std::size_t j = i + 1; j < endpoints.size(); ++j) {
      const Endpoint &a = endpoints[i], &b = endpoints[j];
      if (a.kind != "gpu" && b.kind != "gpu") {
        continue;  // drive-to-drive is not a P2P path we test
      }
      const Endpoint& first = a.kind == "gpu" ? a : b;
      const Endpoint& second = a.kind == "gpu" ? b : a;
      const std::string name = first.bdf + "-" + second.bdf;
      x.pairs[a.bdf].insert(name);
      x.pairs[b.bdf].insert(name);
      for (const auto& br : pci::bridges_between(as_device(a), as_device(b))) { x.pairs[br].insert(name); }
    }
  }
  return x;
}

}  // namespace p2pnode::health
