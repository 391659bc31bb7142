#pragma once
// Data files of the repository compiled into the binary (daemon/embed.cmake): the known-breakage
// table (nvidia/breakages.yaml), the builtin DKMS patches (nvidia/patches/*.patch) and the
// kernel-install hook (lifecycle/kernel-postinst.sh). Names are paths relative to daemon/.
#include <optional>
#include <string_view>
#include <vector>

namespace p2pnode {

std::optional<std::string_view> embedded_file(std::string_view name);
std::vector<std::string_view> embedded_names();

}  // namespace p2pnode
