#pragma once
// Units as people write them in profiles: sizes (32GiB, 256MB), bandwidths (25GB/s), durations
// (2us, 500ms, 6h). Parsers are pure; errors say what was expected.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace p2pnode {

using Bytes = std::uint64_t;
constexpr Bytes KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024, TiB = GiB * 1024;

struct Bandwidth {  // bytes per second
  double bytes_per_s = 0;
  double gbps() const { return bytes_per_s / 1e9; }  // GB/s, decimal, as bandwidth tools print
};

Result<Bytes> parse_size(std::string_view text);
Result<Bandwidth> parse_bandwidth(std::string_view text);
Result<std::chrono::nanoseconds> parse_duration(std::string_view text);

// "32 GiB", "256 MiB", "16 MiB", "128 KiB", "4097 B": binary units, exact where possible.
std::string format_size(Bytes b);
std::string format_duration(std::chrono::nanoseconds d);
std::string format_bandwidth(Bandwidth bw);

}  // namespace p2pnode
