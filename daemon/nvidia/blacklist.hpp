#pragma once
// modprobe.d lines that keep the NVIDIA modules from loading: `blacklist nvidia…` (stops alias
// and udev loads) and `install nvidia… /bin/false|true` (stops every load, modprobe nvidia too).
// nouveau blacklists are what a P2P box wants and are never touched. Pure: text in, text out.
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode::nvidia {

// The NVIDIA module names these lines name (nvidia, nvidia_uvm, nvidia-drm, … as written).
bool is_nvidia_module_name(std::string_view name);

struct BlacklistLine {
  int line = 0;      // 1-based
  std::string text;  // as written
};

// Lines of one modprobe.d file that disable an NVIDIA module.
std::vector<BlacklistLine> find_nvidia_blacklists(std::string_view text);

// The file with those lines commented out ("# disabled by p2pnode (driver.conflicts: remove): …"),
// every other byte unchanged.
std::string disable_nvidia_blacklists(std::string_view text);

}  // namespace p2pnode::nvidia
