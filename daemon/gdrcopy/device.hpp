#pragma once
// /dev/gdrdrv as the profile asks for it (pure; actions/gdrcopy.cpp does the work). gdrdrv
// registers a bare character major and no device, so udev never makes the node: whoever loads it
// must (gdrcopy's own insmod.sh and init scripts do, from /proc/devices), after every load, because
// the major is dynamic and a node left from an earlier load may name another device.
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"

namespace p2pnode::gdrcopy {

struct DeviceWork {
  bool load = false;             // gdrdrv is not loaded: modprobe it (which loads nvidia first)
  bool remove_node = false;      // /dev/gdrdrv is there but is not gdrdrv's node (not a char device, an old major)
  bool make_node = false;        // mknod /dev/gdrdrv c <major> 0
  bool set_mode = false;         // chmod
  bool set_owner = false;        // chown owner:group
  std::vector<std::string> why;  // one clause per item of work
  bool nothing() const { return !load && !remove_node && !make_node && !set_mode && !set_owner; }
};

// What stands between the node as probed and the profile's /dev/gdrdrv. With gdrdrv not loaded,
// only the load: the node's work is decided again once it is (its major is known then).
DeviceWork device_work(const GdrcopySpec& want, const GdrdrvState& g);

// "0660"
std::string octal_mode(unsigned mode);
// The profile's owner (or group) against the node's: by id where the profile gives a number.
bool same_account(const std::string& want, const std::string& name, unsigned id);

}  // namespace p2pnode::gdrcopy
