#include "core/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/text.hpp"

namespace p2pnode {
namespace {

// Splits "32GiB" into 32 and "GiB"; the number may have a fraction, never a sign.
Result<std::pair<double, std::string_view>> split_number(std::string_view text, const char* what, const char* example) {
  const std::string_view s = trim(text, kSpaces);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) { ++i; }
  auto fail = [&](const std::string& why) {
    return Error{"'" + std::string(text) + "' is not a " + what + ": " + why + " (expected e.g. " + example + ")"};
  };
  if (!s.empty() && s[0] == '-') { return fail("it is negative"); }
  if (i == 0) { return fail("it does not start with a number"); }
  double value = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + i, value);
  if (ec != std::errc() || p != s.data() + i) { return fail("the number is malformed"); }
  if (!std::isfinite(value)) { return fail("the number is not finite"); }
  return std::pair<double, std::string_view>{value, trim(s.substr(i), kSpaces)};
}

template <std::size_t N>
const std::pair<std::string_view, double>* find_unit(const std::array<std::pair<std::string_view, double>, N>& table,
                                                     std::string_view unit) {
  for (const auto& e : table) {
    if (e.first == unit) { return &e; }
  }
  return nullptr;
}

template <std::size_t N>
std::string unit_list(const std::array<std::pair<std::string_view, double>, N>& table) {
  std::string s;
  for (const auto& e : table) {
    if (e.first.empty()) { continue; }
    if (!s.empty()) { s += ", "; }
    s += e.first;
  }
  return s;
}

constexpr std::array<std::pair<std::string_view, double>, 9> kSizeUnits{{{"B", 1.0},
                                                                         {"KB", 1e3},
                                                                         {"MB", 1e6},
                                                                         {"GB", 1e9},
                                                                         {"TB", 1e12},
                                                                         {"KiB", 1024.0},
                                                                         {"MiB", 1048576.0},
                                                                         {"GiB", 1073741824.0},
                                                                         {"TiB", 1099511627776.0}}};
constexpr std::array<std::pair<std::string_view, double>, 6> kBandwidthUnits{
    {{"B/s", 1.0}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0}}};
constexpr std::array<std::pair<std::string_view, double>, 8> kDurationUnits{
    {{"ns", 1.0}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}}};

}  // namespace

Result<Bytes> parse_size(std::string_view text) {
  auto parts = split_number(text, "size", "32GiB or 256MiB");
  if (!parts) { return parts.error(); }
  const auto [value, unit] = *parts;
  // A bare number is almost always a forgotten unit ("gpu_vram: 24"), never 24 bytes on purpose.
  if (unit.empty()) {
    return Error{"'" + std::string(text) + "' has no size unit (expected one of " + unit_list(kSizeUnits) + "; write " +
                 std::string(trim(text, kSpaces)) + "B for bytes)"};
  }
  const auto* u = find_unit(kSizeUnits, unit);
  if (!u) {
    std::string hint;
    if (find_unit(kBandwidthUnits, unit)) { hint = "; " + std::string(unit) + " is a bandwidth, a size has no /s"; }
    return Error{"'" + std::string(text) + "' has an unknown size unit '" + std::string(unit) + "' (expected one of " +
                 unit_list(kSizeUnits) + hint + ")"};
  }
  const double bytes = value * u->second;
  if (bytes > 1.8e19) { return Error{"'" + std::string(text) + "' is too large a size"}; }
  if (bytes != std::floor(bytes)) { return Error{"'" + std::string(text) + "' is not a whole number of bytes"}; }
  return static_cast<Bytes>(bytes);
}

Result<Bandwidth> parse_bandwidth(std::string_view text) {
  auto parts = split_number(text, "bandwidth", "25GB/s");
  if (!parts) { return parts.error(); }
  const auto [value, unit] = *parts;
  if (unit.empty()) {
    return Error{"'" + std::string(text) + "' has no bandwidth unit (expected one of " + unit_list(kBandwidthUnits) +
                 ", e.g. 25GB/s)"};
  }
  const auto* u = find_unit(kBandwidthUnits, unit);
  if (!u) {
    std::string hint;
    if (find_unit(kSizeUnits, unit)) {
      hint = "; " + std::string(unit) + " is a size, a bandwidth is per second: " + std::string(unit) + "/s";
    }
    return Error{"'" + std::string(text) + "' has an unknown bandwidth unit '" + std::string(unit) +
                 "' (expected one of " + unit_list(kBandwidthUnits) + hint + ")"};
  }
  return Bandwidth{value * u->second};
}

Result<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  auto parts = split_number(text, "duration", "2us, 500ms or 6h");
  if (!parts) { return parts.error(); }
  const auto [value, unit] = *parts;
  if (unit.empty()) {
    return Error{"'" + std::string(text) + "' has no duration unit (expected one of " + unit_list(kDurationUnits) +
                 ", e.g. 2us or 6h)"};
  }
  const auto* u = find_unit(kDurationUnits, unit);
  if (!u) {
    return Error{"'" + std::string(text) + "' has an unknown duration unit '" + std::string(unit) +
                 "' (expected one of " + unit_list(kDurationUnits) + ")"};
  }
  const double ns = value * u->second;
  if (ns > 9.2e18) { return Error{"'" + std::string(text) + "' is too long a duration"}; }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(ns)));
}

std::string format_size(Bytes b) {
  constexpr std::array<std::pair<const char*, Bytes>, 4> units{
      {{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}}};
  for (const auto& [name, scale] : units) {
    if (b >= scale && b % scale == 0) { return std::to_string(b / scale) + " " + name; }
  }
  for (const auto& [name, scale] : units) {
    if (b >= scale) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f %s", static_cast<double>(b) / static_cast<double>(scale), name);
      return buf;
    }
  }
  return std::to_string(b) + " B";
}

std::string format_duration(std::chrono::nanoseconds d) {
  const double ns = static_cast<double>(d.count());
  char buf[32];
  if (ns < 1e3) {
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  } else if (ns < 1e6) {
    std::snprintf(buf, sizeof buf, "%.3g us", ns / 1e3);
  } else if (ns < 1e9) {
    std::snprintf(buf, sizeof buf, "%.3g ms", ns / 1e6);
  } else if (ns < 60e9) {
    std::snprintf(buf, sizeof buf, "%.3g s", ns / 1e9);
  } else if (ns < 3600e9) {
    std::snprintf(buf, sizeof buf, "%.3g min", ns / 60e9);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g h", ns / 3600e9);
  }
  return buf;
}

std::string format_bandwidth(Bandwidth bw) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", bw.gbps());
  return buf;
}

}  // namespace p2pnode
