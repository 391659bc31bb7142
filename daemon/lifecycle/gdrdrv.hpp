#pragma once
// gdrdrv, gdrcopy's kernel module, through the NVIDIA module's DKMS life cycle
// (lifecycle/module_install.hpp): its own DKMS package, gdrdrv/<gdrcopy release>, staged from the
// profile's gdrcopy.source and built for every kernel with headers against the NVIDIA module's
// staged tree in /usr/src (nv-p2p.h; the open flavour). The NVIDIA tree's identity is part of
// gdrdrv's, so a changed NVIDIA source or patch set rebuilds gdrdrv for every kernel.
#include <optional>
#include <string>

#include "core/profile.hpp"

namespace p2pnode::lifecycle {

inline constexpr const char* kGdrdrvPackage = "gdrdrv";

// The DriverSpec install_module() and module_gaps() take for gdrdrv; nullopt without a gdrcopy
// section or without driver.kernel_module (the loader requires it with gdrcopy).
std::optional<DriverSpec> gdrdrv_spec(const Profile& p);

// The directory gdrdrv is built against: /usr/src/<name>-<version>/kernel-open/nvidia.
std::string gdrdrv_nvidia_src_dir(const DriverSpec& nvidia);

}  // namespace p2pnode::lifecycle
