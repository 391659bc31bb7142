// Identify Controller data (4096 bytes, NVMe base specification figure "Identify Controller
// Data Structure"): the fields the doorbell test checks. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace p2pnode::agent::nvme {

inline constexpr std::size_t kIdentifyBytes = 4096;

struct IdentifyController {
  std::uint16_t vid = 0;    // PCI vendor id
  std::uint16_t ssvid = 0;  // PCI subsystem vendor id
  std::string serial;       // SN, bytes 4..23, ASCII, trailing spaces trimmed
  std::string model;        // MN, bytes 24..63
  std::string firmware;     // FR, bytes 64..71
  std::uint32_t ver = 0;    // VER, bytes 80..83 (0 on NVMe 1.0/1.1 controllers)
  int mdts = 0;             // byte 77
};

// nullopt when the buffer is shorter than 4096 bytes.
std::optional<IdentifyController> parse_identify_controller(std::span<const std::uint8_t> data);

// ASCII text field: non-printable bytes become '?', trailing spaces and NULs trimmed (sysfs and
// nvme-cli trim the same way, so the serial compares with /sys/class/nvme/*/serial).
std::string identify_text(std::span<const std::uint8_t> field);

// Trailing and leading blanks trimmed, for comparing with what sysfs recorded.
std::string trim_blanks(const std::string& s);

}  // namespace p2pnode::agent::nvme
