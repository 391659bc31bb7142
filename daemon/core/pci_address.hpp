#pragma once
// A PCI address as sysfs names a device: domain, bus, device, function, "0000:0b:00.0", in lower
// case. Parsed once where it enters (a profile, a command line, a sysfs listing): "0000:0B:00.0" in a
// profile becomes the "0000:0b:00.0" that sysfs lists, so comparing the two as text is right.
// Header-only and pure: the agent (its own house) parses its --nvme addresses with it too.
#include <optional>
#include <string>
#include <string_view>

namespace p2pnode {

// "dddd:bb:dd.f" of hex digits (either case), the function 0-7.
inline bool is_pci_address(std::string_view s) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') { return false; }
  for (std::size_t i : {0u, 1u, 2u, 3u, 5u, 6u, 8u, 9u}) {
    if (!hex(s[i])) { return false; }
  }
  return s[11] >= '0' && s[11] <= '7';
}

class PciAddress {
 public:
  // nullopt unless is_pci_address(s); the value is in lower case.
  static std::optional<PciAddress> parse(std::string_view s) {
    if (!is_pci_address(s)) { return std::nullopt; }
    std::string t(s);
    for (char& c : t) {
      if (c >= 'A' && c <= 'F') { c = static_cast<char>(c - 'A' + 'a'); }
    }
    return PciAddress(std::move(t));
  }
  const std::string& str() const { return text_; }
  bool operator==(const PciAddress& o) const { return text_ == o.text_; }
  bool operator==(std::string_view s) const { return text_ == s; }
  bool operator<(const PciAddress& o) const { return text_ < o.text_; }

 private:
  explicit PciAddress(std::string t) : text_(std::move(t)) {}
  std::string text_;
};

}  // namespace p2pnode
