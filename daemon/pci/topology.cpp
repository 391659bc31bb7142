#include "pci/topology.hpp"

#include <algorithm>

namespace p2pnode::pci {

const char* to_string(PairClass c) {
  switch (c) {
    case PairClass::self: return "X";
    case PairClass::pix: return "PIX";
    case PairClass::pxb: return "PXB";
    case PairClass::phb: return "PHB";
    case PairClass::node: return "NODE";
    case PairClass::sys: break;
  }
  return "SYS";
}

std::size_t common_prefix(const PciDevice& a, const PciDevice& b) {
  std::size_t k = 0;
  while (k < a.upstream.size() && k < b.upstream.size() && a.upstream[k] == b.upstream[k]) { ++k; }
  return k;
}

PairClass classify_pair(const PciDevice& a, const PciDevice& b) {
  if (a.bdf == b.bdf) { return PairClass::self; }
  const std::size_t k = common_prefix(a, b);
  if (k > 0) {
    const std::size_t below = std::max(a.upstream.size(), b.upstream.size()) - k;
    return below <= 1 ? PairClass::pix : PairClass::pxb;
  }
  if (!a.root_complex.empty() && a.root_complex == b.root_complex) { return PairClass::phb; }
  if (a.numa_node == b.numa_node) { return PairClass::node; }
  return PairClass::sys;
}

TopologyMatrix topology_matrix(const std::vector<const PciDevice*>& devices) {
  TopologyMatrix m;
  for (const auto* d : devices) { m.bdfs.push_back(d->bdf); }
  m.cls.resize(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    for (std::size_t j = 0; j < devices.size(); ++j) { m.cls[i].push_back(classify_pair(*devices[i], *devices[j])); }
  }
  return m;
}

std::vector<std::string> bridges_between(const PciDevice& a, const PciDevice& b) {
  const std::size_t k = common_prefix(a, b);
  std::vector<std::string> out;
  if (k > 0) { out.push_back(a.upstream[k - 1]); }
  for (std::size_t i = k; i < a.upstream.size(); ++i) { out.push_back(a.upstream[i]); }
  for (std::size_t i = k; i < b.upstream.size(); ++i) { out.push_back(b.upstream[i]); }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace p2pnode::pci
