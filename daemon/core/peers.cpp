#include "core/peers.hpp"

namespace p2pnode {

std::vector<DevicePair> peer_pairs(const Profile& p, const Inventory& inv) {
  std::vector<DevicePair> pairs;
  const auto gpus = inv.gpus();
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (std::size_t j = i + 1; j < gpus.size(); ++j) { pairs.emplace_back(gpus[i], gpus[j]); }
  }
  if (p.nvme) {
    for (const auto& d : p.nvme->drives) {
      if (d.pair_gpu && d.address) {
        if (const auto *n = inv.find(d.address->str()), *g = inv.find(d.pair_gpu->str()); n && g && n != g) {
          pairs.emplace_back(n, g);
        }
      }
    }
  }
  return pairs;
}

}  // namespace p2pnode
