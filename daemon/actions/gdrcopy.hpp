#pragma once
// The profile's gdrcopy section: gdrdrv through DKMS like the NVIDIA module, then loaded with its
// device node (actions/gdrcopy.cpp).
#include <memory>

#include "actions/action.hpp"

namespace p2pnode::actions {

std::unique_ptr<Action> make_gdrcopy_module();  // "gdrcopy.module"
std::unique_ptr<Action> make_gdrcopy_device();  // "gdrcopy.device"

}  // namespace p2pnode::actions
