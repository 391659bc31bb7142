// PCIe link figures read from sysfs (read only, the GPU's own function directory).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace p2pnode::agent {

struct LinkInfo {
  double current_speed_gts = 0.0;  // GT/s per lane
  int current_width = 0;
  double max_speed_gts = 0.0;
  int max_width = 0;
  // Per direction, after line encoding (8b/10b up to 5 GT/s, 128b/130b from 8 GT/s), GB/s = 1e9 B/s.
  double theoretical_gbps = 0.0;
};

// "32.0 GT/s PCIe" -> 32.0, "8 GT/s" -> 8, "2.5 GT/s" -> 2.5; nullopt when unknown.
std::optional<double> decode_link_speed(std::string_view text);
// "16\n" -> 16; nullopt when not a positive integer.
std::optional<int> decode_link_width(std::string_view text);
// Per-direction data rate of a link in GB/s.
double link_theoretical_gbps(double speed_gts, int width);

// Reads <sysfs_root>/bus/pci/devices/<bdf>/{current,max}_link_{speed,width}.
// bdf as "0000:3b:00.0" (lower case). nullopt when the files are absent or undecodable.
std::optional<LinkInfo> read_link_info(const std::string& sysfs_root, const std::string& bdf);

}  // namespace p2pnode::agent
