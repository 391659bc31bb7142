#include "pci/sysfs_decode.hpp"

#include <charconv>
#include <sstream>

namespace p2pnode::pci {

std::optional<std::uint64_t> parse_hex(std::string_view t) {
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) { t.remove_suffix(1); }
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) { t.remove_prefix(2); }
  if (t.empty()) { return std::nullopt; }
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 16);
  if (ec != std::errc() || p != t.data() + t.size()) { return std::nullopt; }
  return v;
}

std::optional<int> parse_int(std::string_view t) {
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) { t.remove_suffix(1); }
  int v = 0;
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size()) { return std::nullopt; }
  return v;
}

Result<std::vector<Bar>> decode_resource_table(std::string_view text) {
  std::vector<Bar> bars;
  int index = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) { nl = text.size(); }
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) { continue; }
    std::istringstream ss{std::string(line)};
    std::string a, b, c, extra;
    ss >> a >> b >> c >> extra;
    const auto start = parse_hex(a), end = parse_hex(b), flags = parse_hex(c);
    if (!start || !end || !flags || !extra.empty()) {
      return Error{"line " + std::to_string(index + 1) + " of resource is '" + std::string(line) +
                   "', expected three hex numbers (start end flags)"};
    }
    if (*end < *start && (*start || *end)) {
      return Error{"line " + std::to_string(index + 1) + " of resource ends before it starts"};
    }
    if (*start || *end || *flags) { bars.push_back(Bar{index, *start, *end, *flags}); }
    ++index;
  }
  if (index == 0) { return Error{"resource is empty"}; }
  return bars;
}

std::optional<double> parse_link_speed(std::string_view t) {
  double v = 0;
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || v <= 0) { return std::nullopt; }
  std::string_view rest(p, static_cast<std::size_t>(t.data() + t.size() - p));
  while (!rest.empty() && rest.front() == ' ') { rest.remove_prefix(1); }
  if (rest.rfind("GT/s", 0) != 0) { return std::nullopt; }
  return v;
}

std::optional<std::uint64_t> decode_resize_bitmap(std::string_view t) { return parse_hex(t); }

DeviceKind classify(std::uint16_t vendor, std::uint32_t class_code) {
  const std::uint32_t base = class_code >> 16, sub = (class_code >> 8) & 0xFF;
  if (base == 0x03 && vendor == 0x10de) {
    return DeviceKind::gpu;  // VGA 0x0300, 3D 0x0302
  }
  if (base == 0x01 && sub == 0x08) {
    return DeviceKind::nvme;  // 0x010802
  }
  if (base == 0x06 && sub == 0x04) {
    return DeviceKind::bridge;  // PCI-PCI bridge
  }
  if (base == 0x06 && sub == 0x00) { return DeviceKind::host_bridge; }
  if (vendor == 0x10de) {
    return DeviceKind::gpu_function;  // audio, USB-C of a GPU
  }
  return DeviceKind::other;
}

}  // namespace p2pnode::pci
