#include "p2pnode/agent/nvme/identify.hpp"

namespace p2pnode::agent::nvme {

std::string identify_text(std::span<const std::uint8_t> field) {
  std::string s;
  s.reserve(field.size());
  for (std::uint8_t c : field) { s.push_back(c >= 0x20 && c < 0x7F ? static_cast<char>(c) : (c == 0 ? ' ' : '?')); }
  return trim_blanks(s);
}

std::string trim_blanks(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) { return {}; }
  const auto b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

std::optional<IdentifyController> parse_identify_controller(std::span<const std::uint8_t> d) {
  if (d.size() < kIdentifyBytes) { return std::nullopt; }
  IdentifyController id;
  id.vid = static_cast<std::uint16_t>(d[0] | d[1] << 8);
  id.ssvid = static_cast<std::uint16_t>(d[2] | d[3] << 8);
  id.serial = identify_text(d.subspan(4, 20));
  id.model = identify_text(d.subspan(24, 40));
  id.firmware = identify_text(d.subspan(64, 8));
  id.mdts = d[77];
  id.ver = static_cast<std::uint32_t>(d[80]) | static_cast<std::uint32_t>(d[81]) << 8 |
           static_cast<std::uint32_t>(d[82]) << 16 | static_cast<std::uint32_t>(d[83]) << 24;
  return id;
}

}  // namespace p2pnode::agent::nvme
