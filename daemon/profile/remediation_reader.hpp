#pragma once
// The profile's `remediation` section: which rungs of the ladder the node may climb by itself.
#include "core/profile.hpp"
#include "profile/yaml_reader.hpp"

namespace p2pnode::profile {

void read_remediation(MapReader& root, Profile& p);

}  // namespace p2pnode::profile
