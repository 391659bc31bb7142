#pragma once
// The DKMS package p2pnode builds for a profile's driver, and the names DKMS and the source tree
// derive from it: the one place "name/version" and "/usr/src/name-version" are spelled.
#include <string>

#include "core/profile.hpp"

namespace p2pnode {

struct ModulePackage {
  std::string name, version;  // nvidia-p2p, 550.90.07

  std::string dkms_id() const { return name + "/" + version; }      // nvidia-p2p/550.90.07 (dkms status, -m/-v)
  std::string dir_name() const { return name + "-" + version; }     // nvidia-p2p-550.90.07
  std::string src_dir() const { return "/usr/src/" + dir_name(); }  // where dkms add finds the source
};

// The profile's kernel module's name (nvidia-p2p when the profile builds none) at the driver's version.
inline ModulePackage module_package(const DriverSpec& d) {
  return {d.kernel_module ? d.kernel_module->name : "nvidia-p2p", d.version};
}

}  // namespace p2pnode
