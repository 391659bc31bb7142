#pragma once
// Which devices talk peer-to-peer on this box: every pair of GPUs, plus each NVMe drive the
// profile pairs with a peer (`pair_gpu`, by address). The ACS check and the ACS fix both judge
// the bridges between exactly these pairs.
#include <utility>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"

namespace p2pnode {

using DevicePair = std::pair<const PciDevice*, const PciDevice*>;
std::vector<DevicePair> peer_pairs(const Profile& profile, const Inventory& inv);

}  // namespace p2pnode
