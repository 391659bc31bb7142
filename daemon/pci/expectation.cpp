#include "pci/expectation.hpp"

#include <cstdio>

#include "pci/topology.hpp"

namespace p2pnode::pci {

namespace {
struct Narrowest {
  double gbps = 0;
  std::string what;
  void consider(const PciDevice* d) {
    if (!d || !d->link.current_gts || !d->link.current_width) { return; }
    const double g = pcie_gbps(*d->link.current_gts, *d->link.current_width);
    if (g <= 0 || (gbps > 0 && g >= gbps)) { return; }
    gbps = g;
    char b[160];
    std::snprintf(b, sizeof b, "%s: x%d at %g GT/s (Gen%d), %.2f GB/s", d->bdf.c_str(), *d->link.current_width,
                  *d->link.current_gts, pcie_generation(*d->link.current_gts), g);
    what = b;
  }
};
}  // namespace

std::string pair_link(const PciDevice& a, const PciDevice& b, const Inventory& inv) {
  if (const auto* i = inv.interconnect(a.bdf, b.bdf); i && i->nvlinks > 0) { return "NV" + std::to_string(i->nvlinks); }
  return to_string(classify_pair(a, b));
}

std::optional<Ceiling> pair_ceiling(const PciDevice& a, const PciDevice& b, const Inventory& inv) {
  if (const auto* i = inv.interconnect(a.bdf, b.bdf); i && i->nvlinks > 0) {
    if (nvlink_link_gbps(i->nvlink_generation) <= 0) {
      return std::nullopt;  // NVLink, but of which rate?
    }
    Ceiling c;
    c.path = PathKind::nvlink;
    c.gbps = i->nvlinks * nvlink_link_gbps(i->nvlink_generation);
    c.link = "NV" + std::to_string(i->nvlinks);
    char b2[160];
    std::snprintf(b2, sizeof b2, "%d NVLink %d links at %g GB/s each, %.0f GB/s", i->nvlinks, i->nvlink_generation,
                  nvlink_link_gbps(i->nvlink_generation), c.gbps);
    c.narrowest = b2;
    return c;
  }
  // Every link on the path is reported by a device on it: an endpoint (its upstream link), a
  // switch upstream port (the link above it) or a downstream/root port (the link below it).
  Narrowest n;
  n.consider(&a);
  n.consider(&b);
  const std::size_t k = common_prefix(a, b);
  for (std::size_t i = k; i < a.upstream.size(); ++i) { n.consider(inv.find(a.upstream[i])); }
  for (std::size_t i = k; i < b.upstream.size(); ++i) { n.consider(inv.find(b.upstream[i])); }
  if (n.gbps <= 0) { return std::nullopt; }
  const PairClass cls = classify_pair(a, b);
  Ceiling c;
  c.path = cls == PairClass::sys ? PathKind::pcie_p2p_cross_socket : PathKind::pcie_p2p;
  c.gbps = n.gbps;
  c.link = to_string(cls);
  c.narrowest = n.what;
  return c;
}

std::optional<Ceiling> host_ceiling(const PciDevice& gpu, const Inventory& inv) {
  Narrowest n;
  n.consider(&gpu);
  for (const auto& u : gpu.upstream) { n.consider(inv.find(u)); }
  if (n.gbps <= 0) { return std::nullopt; }
  return Ceiling{PathKind::pcie_host, n.gbps, "PCIe", n.what};
}

Expectation expect(const Ceiling& c, CopyKind copy) {
  const Efficiency& e = efficiency(c.path, copy);
  Expectation x;
  x.ceiling = c;
  x.copy = copy;
  x.efficiency = e.factor;
  x.expected_gbps = c.gbps * e.factor * (copy == CopyKind::bidirectional ? 2 : 1);
  x.source = std::string(e.source);
  return x;
}

}  // namespace p2pnode::pci
