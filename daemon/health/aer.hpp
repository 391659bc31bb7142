#pragma once
// PCIe AER statistics as the kernel exposes them per device (aer_dev_correctable,
// aer_dev_nonfatal, aer_dev_fatal; Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats):
// one "NAME COUNT" line per error type, then TOTAL_ERR_COR / TOTAL_ERR_NONFATAL / TOTAL_ERR_FATAL.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace p2pnode::health {

enum class AerSeverity { correctable, nonfatal, fatal };
const char* to_string(AerSeverity s);      // "correctable", "nonfatal", "fatal"
const char* aer_file_name(AerSeverity s);  // "aer_dev_correctable", …
inline constexpr AerSeverity kAerSeverities[] = {AerSeverity::correctable, AerSeverity::nonfatal, AerSeverity::fatal};

struct AerCounts {
  std::map<std::string, std::uint64_t> by_name;  // RxErr, BadTLP, … (without the TOTAL_ line)
  std::uint64_t total = 0;                       // TOTAL_ERR_*, else the sum of the lines
};

// Decodes one aer_dev_* file. An error names the line and what was expected.
Result<AerCounts> decode_aer_stats(std::string_view text);

}  // namespace p2pnode::health
