#pragma once
// Which P2P paths a device is on: every GPU pair and GPU-NVMe pair whose PCIe path crosses it
// (the two ends and pci::bridges_between), and every endpoint whose upstream chain holds it.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "health/sample.hpp"

namespace p2pnode::health {

struct PathIndex {
  std::map<std::string, std::set<std::string>> pairs;      // device -> "gpu-gpu", "gpu-nvme"
  std::map<std::string, std::set<std::string>> endpoints;  // device -> GPUs and drives it serves
  std::map<std::string, std::string> kind;                 // device -> gpu, nvme, bridge
  // GPUs and the port right above each: that link slows down when the GPU idles.
  std::set<std::string> idle_links;
  // Every device to watch, endpoints first then bridges, each once.
  std::vector<std::string> devices;
};

PathIndex index_paths(const std::vector<Endpoint>& endpoints);

}  // namespace p2pnode::health
