#pragma once
// The profile's gdrcopy section: gdrdrv through DKMS like the NVIDIA module, then loaded with its
// device node (actions/gdrcopy.cpp), and its user-space library for the self-test.
#include <memory>

#include "actions/action.hpp"

namespace p2pnode::actions {

std::unique_ptr<Action> make_gdrcopy_module();   // "gdrcopy.module"
std::unique_ptr<Action> make_gdrcopy_device();   // "gdrcopy.device"
std::unique_ptr<Action> make_gdrcopy_library();  // "gdrcopy.library" (actions/gdrcopy_library.cpp)

}  // namespace p2pnode::actions
