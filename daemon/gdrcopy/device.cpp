#include "gdrcopy/device.hpp"

#include <cstdio>

namespace p2pnode::gdrcopy {

std::string octal_mode(unsigned mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

bool same_account(const std::string& want, const std::string& name, unsigned id) {
  const bool numeric = !want.empty() && want.find_first_not_of("0123456789") == std::string::npos;
  return numeric ? std::stoull(want) == id : want == name;
}

DeviceWork device_work(const GdrcopySpec& want, const GdrdrvState& g) {
  DeviceWork w;
  if (!g.loaded) {
    w.load = true;
    w.why.push_back("gdrdrv is not loaded");
    return w;
  }
  if (!g.major) {
    // Loaded but not in /proc/devices: nothing to make a node for (a failed register_chrdev).
    w.why.push_back("gdrdrv is loaded but has no major in /proc/devices");
    return w;
  }
  const bool wrong_node = g.device_node && (!g.device_is_char || g.device_major != g.major);
  if (wrong_node) {
    w.remove_node = true;
    w.why.push_back(!g.device_is_char
                        ? "/dev/gdrdrv is not a character device"
                        : "/dev/gdrdrv names major " + std::to_string(g.device_major.value_or(0)) + ", gdrdrv has " +
                              std::to_string(*g.major) + " (left from an earlier load)");
  }
  if (!g.device_node || wrong_node) {
    w.make_node = w.set_owner = true;
    if (!g.device_node) { w.why.push_back("/dev/gdrdrv is missing"); }
    return w;  // mknod -m gives the mode; chown follows
  }
  if (g.device_mode != want.device_mode) {
    w.set_mode = true;
    w.why.push_back("/dev/gdrdrv is " + octal_mode(g.device_mode.value_or(0)) + ", the profile asks " +
                    octal_mode(want.device_mode));
  }
  if (!same_account(want.device_owner, g.device_owner, g.device_uid) ||
      !same_account(want.device_group, g.device_group, g.device_gid)) {
    w.set_owner = true;
    w.why.push_back("/dev/gdrdrv is owned by " + g.device_owner + ":" + g.device_group + ", the profile asks " +
                    want.device_owner + ":" + want.device_group);
  }
  return w;
}

}  // namespace p2pnode::gdrcopy
