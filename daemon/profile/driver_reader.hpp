#pragma once
// The profile's `driver` section: the version, the userspace installer and its flags, the kernel
// module (source, patches, signing, BAR1 mapping), NVreg options, conflicts and reload.
#include "core/profile.hpp"
#include "profile/yaml_reader.hpp"

namespace p2pnode::profile {

void read_driver(MapReader& root, Profile& p);

}  // namespace p2pnode::profile
