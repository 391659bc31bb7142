#pragma once
// Known breakages forecast for the coming DKMS build, before any download or build: the breakage
// table against each kernel the build is for (its release and header tests, as probed) and the
// builtin patches the profile names. Pure.
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"

namespace p2pnode::nvidia {

// The builtin patches a module source names ({builtin: …} entries of its patches).
std::vector<std::string> builtin_patches_of(const ModuleSource& km);

// One line per kernel with headers that lacks the profile's module and whose build a known
// breakage will stop, where the profile does not name its fix: "6.12.117+deb13-amd64: known
// breakage X will stop the build of …; fix: …". Empty: nothing known stands in the way.
std::vector<std::string> build_stops(const Inventory& inv, const DriverSpec& d);

}  // namespace p2pnode::nvidia
