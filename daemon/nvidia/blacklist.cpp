#include "nvidia/blacklist.hpp"

#include <sstream>

namespace p2pnode::nvidia {
namespace {

constexpr std::string_view kDisabledPrefix = "# disabled by p2pnode (driver.conflicts: remove): ";

bool is_false_command(std::istringstream& words) {
  std::string prog;
  if (!(words >> prog)) { return false; }
  return prog == "/bin/false" || prog == "/bin/true" || prog == "/usr/bin/false" || prog == "/usr/bin/true" ||
         prog == "false" || prog == "true";
}

bool disables_nvidia(std::string_view line) {
  std::string code(line.substr(0, line.find('#')));
  std::istringstream words(code);
  std::string cmd, mod;
  if (!(words >> cmd >> mod) || !is_nvidia_module_name(mod)) { return false; }
  if (cmd == "blacklist") { return true; }
  return cmd == "install" && is_false_command(words);
}

}  // namespace

bool is_nvidia_module_name(std::string_view name) {
  std::string n(name);
  for (char& c : n) {
    if (c == '-') { c = '_'; }
  }
  return n == "nvidia" || n == "nvidia_uvm" || n == "nvidia_modeset" || n == "nvidia_drm" || n == "nvidia_peermem";
}

std::vector<BlacklistLine> find_nvidia_blacklists(std::string_view text) {
  std::vector<BlacklistLine> out;
  std::size_t start = 0;
  for (int n = 1; start < text.size(); ++n) {
    const auto end = text.find('\n', start);
    const auto line = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (disables_nvidia(line)) { out.push_back({n, std::string(line)}); }
    if (end == std::string_view::npos) { break; }
    start = end + 1;
  }
  return out;
}

std::string disable_nvidia_blacklists(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 128);
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    const auto line = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (disables_nvidia(line)) { out += kDisabledPrefix; }
    out += line;
    if (end == std::string_view::npos) { break; }
    out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace p2pnode::nvidia
