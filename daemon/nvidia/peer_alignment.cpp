#include "nvidia/peer_alignment.hpp"

#include <regex>
#include <set>

#include "core/hex.hpp"

namespace p2pnode::nvidia {

std::optional<bool> demands_peer_alignment(std::string_view text) {
  static const std::regex check(
      R"(if\s*\(\s*!\s*NV_IS_ALIGNED64\s*\(\s*peerDmaAddr\s*,\s*RM_PAGE_SIZE_512M\s*\)\s*\))");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(text.begin(), text.end(), m, check)) { return std::nullopt; }
  // The statement the if guards: its braced block (the trees' style), or one statement up to ';'.
  std::size_t at = static_cast<std::size_t>(m.position(0) + m.length(0));
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) { ++at; }
  std::string_view body;
  if (at < text.size() && text[at] == '{') {
    int depth = 0;
    std::size_t end = at;
    for (; end < text.size(); ++end) {
      if (text[end] == '{') { ++depth; }
      if (text[end] == '}' && --depth == 0) { break; }
    }
    body = text.substr(at, end - at);
  } else {
    body = text.substr(at, text.find(';', at) - at);
  }
  return body.find("return") != std::string_view::npos;
}

namespace {
struct ClientRc {
  std::uint16_t device;
  const char* name;
  bool shared_with_server;  // the same id serves EPYC (Rome): client only when it is the box's one root complex
};
// tinygrad PR#48: X570 (Matisse, 1022:1480, shared with Rome); tinygrad#44: X870E (Raphael/Granite
// Ridge, 1022:14d8); Renoir/Cezanne APUs (1022:1630) share the AM4 client I/O layout.
constexpr ClientRc kClientRcs[] = {
    {0x1480, "AMD Matisse/Vermeer root complex 1022:1480 (AM4: X570, B550)", true},
    {0x14d8, "AMD Raphael/Granite Ridge root complex 1022:14d8 (AM5: X670, X870)", false},
    {0x1630, "AMD Renoir/Cezanne root complex 1022:1630 (AM4 APU)", false},
};
}  // namespace

std::optional<std::string> offset_peer_address_platform(const Inventory& inv) {
  if (inv.gpus().size() < 2) { return std::nullopt; }
  std::set<std::string> complexes;
  for (const auto& d : inv.devices) {
    if (d.kind == DeviceKind::host_bridge && !d.root_complex.empty()) { complexes.insert(d.root_complex); }
  }
  for (const auto& d : inv.devices) {
    if (d.kind != DeviceKind::host_bridge || d.vendor != 0x1022) { continue; }
    for (const auto& c : kClientRcs) {
      if (d.device == c.device && (!c.shared_with_server || complexes.size() == 1)) { return std::string(c.name); }
    }
  }
  return std::nullopt;
}

}  // namespace p2pnode::nvidia
