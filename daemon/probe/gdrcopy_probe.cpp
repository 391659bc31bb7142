// gdrcopy's kernel module as the running kernel has it: loaded or not, its version and the NVIDIA
// flavour it was built for (its /proc/driver/gdrdrv/params), its character device's major
// (/proc/devices) and /dev/gdrdrv, which nothing but whoever loads the module makes (gdrdrv registers
// a bare major: no class, so udev makes no node).
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <sstream>

#include "probe/probe.hpp"

namespace p2pnode::probe {
namespace {

// "name:x:id:..." lines of /etc/passwd or /etc/group: the name for id, else the id itself.
std::string account_name(const sys::SysRoot& root, const char* file, unsigned id) {
  const std::string wanted = std::to_string(id);
  std::istringstream in(root.read_text(file).value_or(""));
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    const auto c = b == std::string::npos ? b : line.find(':', b + 1);
    if (c != std::string::npos && line.substr(b + 1, c - b - 1) == wanted) { return line.substr(0, a); }
  }
  return wanted;
}

}  // namespace

GdrdrvState probe_gdrdrv(const sys::SysRoot& root) {
  GdrdrvState s;
  s.loaded = root.is_dir("/sys/module/gdrdrv");
  if (auto v = root.read_attr("/sys/module/gdrdrv/version"); v && !v->empty()) { s.version = *v; }
  if (auto params = root.read_text("/proc/driver/gdrdrv/params")) {
    std::istringstream in(*params);
    for (std::string line; std::getline(in, line);) {
      const std::string key = "Built for NVIDIA driver flavor: ";
      if (line.rfind(key, 0) == 0) {
        std::istringstream word(line.substr(key.size()));
        std::string flavour;
        word >> flavour;
        if (flavour == "opensource") { s.open_flavour = true; }
        if (flavour == "proprietary") { s.open_flavour = false; }
      }
      if (line.rfind("Version: ", 0) == 0 && !s.version) { s.version = line.substr(9); }
    }
  }
  if (auto devices = root.read_text("/proc/devices")) {
    std::istringstream in(*devices);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      int major = 0;
      std::string name;
      if (words >> major >> name && name == "gdrdrv") { s.major = major; }
      if (line.rfind("Block devices:", 0) == 0) { break; }
    }
  }
  struct stat st {};
  if (::stat(root.host_path("/dev/gdrdrv").c_str(), &st) == 0) {
    s.device_node = true;
    s.device_is_char = S_ISCHR(st.st_mode);
    s.device_mode = static_cast<unsigned>(st.st_mode & 07777);
    if (s.device_is_char) { s.device_major = static_cast<int>(major(st.st_rdev)); }
    s.device_uid = st.st_uid;
    s.device_gid = st.st_gid;
    s.device_owner = account_name(root, "/etc/passwd", st.st_uid);
    s.device_group = account_name(root, "/etc/group", st.st_gid);
  }
  return s;
}

}  // namespace p2pnode::probe
