#pragma once
// Which profile applies to this box: the one whose `match` selects it. None or several is an error.
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "core/result.hpp"

namespace p2pnode::profile {

// Empty when the profile matches, else the reasons it does not.
std::vector<std::string> match_mismatches(const Profile& p, const Inventory& inv);
Result<const Profile*> select_profile(const std::vector<Profile>& profiles, const Inventory& inv);

}  // namespace p2pnode::profile
