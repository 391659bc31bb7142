#pragma once
// What a GPU pair, or a GPU and host memory, should move: the narrowest link on the path (the
// ceiling) times the efficiency that healthy boxes reach on that kind of path (core/link_rate).
#include <optional>
#include <string>

#include "core/inventory.hpp"
#include "core/link_rate.hpp"

namespace p2pnode::pci {

struct Ceiling {
  PathKind path = PathKind::pcie_p2p;
  double gbps = 0;        // per direction
  std::string link;       // the pair's class: "NV18", "PIX" … "SYS"; "PCIe" for host copies
  std::string narrowest;  // the link that sets the ceiling, in words
};

// "NV<n>" when the interconnects say the two GPUs share n NVLinks, else the PCIe class.
std::string pair_link(const PciDevice& a, const PciDevice& b, const Inventory& inv);

// NVLink when the pair has NVLinks (nullopt when their generation is unknown); else the narrowest PCIe link between
// the two (both endpoints' links and every bridge below where their paths meet). nullopt when no
// link on the path has a known speed and width.
std::optional<Ceiling> pair_ceiling(const PciDevice& a, const PciDevice& b, const Inventory& inv);
// The narrowest PCIe link from the GPU up to its root port.
std::optional<Ceiling> host_ceiling(const PciDevice& gpu, const Inventory& inv);

struct Expectation {
  Ceiling ceiling;
  CopyKind copy = CopyKind::ce;
  double efficiency = 0;
  double expected_gbps = 0;  // bidirectional: the sum of both directions
  std::string source;        // where the efficiency was measured
};
Expectation expect(const Ceiling& c, CopyKind copy);

}  // namespace p2pnode::pci
