#pragma once
// The pairwise PCIe relation of two devices, like `nvidia-smi topo -m`, from sysfs paths alone.
#include <cstddef>
#include <string>
#include <vector>

#include "core/inventory.hpp"

namespace p2pnode::pci {

enum class PairClass { self, pix, pxb, phb, node, sys };
const char* to_string(PairClass c);  // "X", "PIX", "PXB", "PHB", "NODE", "SYS"

// PIX: within one switch (at most one bridge below the deepest common bridge);
// PXB: several bridges, no host bridge; PHB: same root complex, different root ports;
// NODE: different root complexes, same NUMA node; SYS: across NUMA nodes.
PairClass classify_pair(const PciDevice& a, const PciDevice& b);

// How many upstream bridges a and b share, counted from the root complex.
std::size_t common_prefix(const PciDevice& a, const PciDevice& b);

struct TopologyMatrix {
  std::vector<std::string> bdfs;
  std::vector<std::vector<PairClass>> cls;
};
TopologyMatrix topology_matrix(const std::vector<const PciDevice*>& devices);

// The bridges on the path between a and b (below their deepest common bridge, both sides,
// plus that common bridge; all root ports when they meet only at the host bridge).
std::vector<std::string> bridges_between(const PciDevice& a, const PciDevice& b);

}  // namespace p2pnode::pci
