#include "p2pnode/agent/link.hpp"

#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

namespace p2pnode::agent {

std::optional<double> decode_link_speed(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0) { ++i; }
  std::size_t j = i;
  while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) != 0 || text[j] == '.')) { ++j; }
  if (j == i) { return std::nullopt; }
  const std::string number(text.substr(i, j - i));
  std::string rest(text.substr(j));
  if (rest.find("GT/s") == std::string::npos) { return std::nullopt; }
  try {
    std::size_t used = 0;
    const double v = std::stod(number, &used);
    if (used != number.size() || !(v > 0.0)) { return std::nullopt; }
    return v;
  } catch (const std::exception&) { return std::nullopt; }
}

std::optional<int> decode_link_width(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) { text.remove_suffix(1); }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) { text.remove_prefix(1); }
  if (!text.empty() && text.front() == 'x') { text.remove_prefix(1); }
  int v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size() || v <= 0 || v > 64) {
    return std::nullopt;
  }
  return v;
}

double link_theoretical_gbps(double speed_gts, int width) {
  const double encoding = speed_gts >= 8.0 ? 128.0 / 130.0 : 8.0 / 10.0;
  return speed_gts * static_cast<double>(width) * encoding / 8.0;
}

namespace {
std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) { return std::nullopt; }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

std::optional<LinkInfo> read_link_info(const std::string& sysfs_root, const std::string& bdf) {
  const std::string dir = sysfs_root + "/bus/pci/devices/" + bdf + "/";
  const auto cs = slurp(dir + "current_link_speed");
  const auto cw = slurp(dir + "current_link_width");
  if (!cs || !cw) { return std::nullopt; }
  const auto speed = decode_link_speed(*cs);
  const auto width = decode_link_width(*cw);
  if (!speed || !width) { return std::nullopt; }
  LinkInfo li;
  li.current_speed_gts = *speed;
  li.current_width = *width;
  if (const auto ms = slurp(dir + "max_link_speed")) { li.max_speed_gts = decode_link_speed(*ms).value_or(0.0); }
  if (const auto mw = slurp(dir + "max_link_width")) { li.max_width = decode_link_width(*mw).value_or(0); }
  li.theoretical_gbps = link_theoretical_gbps(li.current_speed_gts, li.current_width);
  return li;
}

}  // namespace p2pnode::agent
