#include "nvidia/ld_cache.hpp"

#include <cstring>
#include <sstream>

namespace p2pnode::nvidia {
namespace {
constexpr std::string_view kOldMagic = "ld.so-1.7.0";           // struct cache_file: magic[11], nlibs
constexpr std::string_view kNewMagic = "glibc-ld.so.cache1.1";  // magic[17] + version[3]
constexpr std::size_t kOldHeader = 16, kOldEntry = 12;          // {int32 flags; uint32 key, value}
constexpr std::size_t kNewHeader = 48, kNewEntry = 24;          // {int32 flags; uint32 key, value, osv; uint64 hwcap}
constexpr std::uint32_t kMaxEntries = 1u << 20;

std::uint32_t u32(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint32_t>(b[at]) | static_cast<std::uint32_t>(b[at + 1]) << 8 |
         static_cast<std::uint32_t>(b[at + 2]) << 16 | static_cast<std::uint32_t>(b[at + 3]) << 24;
}

Error bad(std::size_t at, const std::string& what) {
  return Error{"ld.so.cache: at byte " + std::to_string(at) + ": " + what};
}

// A NUL-terminated string at `at` (offsets count from the start of the new-format header).
Result<std::string> string_at(std::span<const std::uint8_t> b, std::size_t at, std::size_t field) {
  if (at >= b.size()) {
    return bad(field,
               "string offset " + std::to_string(at) + " beyond the file (" + std::to_string(b.size()) + " bytes)");
  }
  const auto* begin = reinterpret_cast<const char*>(b.data() + at);
  const auto* nul = static_cast<const char*>(std::memchr(begin, 0, b.size() - at));
  if (!nul) { return bad(field, "string at " + std::to_string(at) + " has no terminating NUL"); }
  return std::string(begin, nul);
}
}  // namespace

Result<std::vector<LdCacheEntry>> parse_ld_so_cache(std::span<const std::uint8_t> bytes) {
  std::size_t start = 0;
  auto has = [&](std::size_t at, std::string_view magic) {
    return bytes.size() >= at + magic.size() && std::memcmp(bytes.data() + at, magic.data(), magic.size()) == 0;
  };
  if (has(0, kOldMagic)) {  // old table first; the new one follows it, 8-byte aligned
    if (bytes.size() < kOldHeader) { return bad(0, "truncated old-format header"); }
    const std::uint32_t n = u32(bytes, 12);
    if (n > kMaxEntries) { return bad(12, "implausible old-format entry count " + std::to_string(n)); }
    start = (kOldHeader + std::size_t{n} * kOldEntry + 7) & ~std::size_t{7};
  }
  if (!has(start, kNewMagic)) {
    if (start != 0) { return bad(start, "expected the new-format table ('glibc-ld.so.cache1.1') after the old one"); }
    return bad(0, "not an ld.so.cache: expected 'glibc-ld.so.cache1.1' or 'ld.so-1.7.0' at the start");
  }
  const auto b = bytes.subspan(start);
  if (b.size() < kNewHeader) {
    return bad(start, "truncated header (" + std::to_string(b.size()) + " bytes, expected 48)");
  }
  const std::uint32_t nlibs = u32(b, 20);
  if (nlibs > kMaxEntries) { return bad(start + 20, "implausible entry count " + std::to_string(nlibs)); }
  // glibc >= 2.33 records the byte order at offset 28: 0 unset, 1 invalid, 2 little, 3 big.
  if (b[28] == 3) { return bad(start + 28, "a big-endian cache; expected one for x86-64 (little-endian)"); }
  if (b.size() < kNewHeader + std::size_t{nlibs} * kNewEntry) {
    return bad(start, std::to_string(nlibs) + " entries need " +
                          std::to_string(kNewHeader + std::size_t{nlibs} * kNewEntry) + " bytes, the table has " +
                          std::to_string(b.size()));
  }
  std::vector<LdCacheEntry> out;
  out.reserve(nlibs);
  for (std::uint32_t i = 0; i < nlibs; ++i) {
    const std::size_t e = kNewHeader + std::size_t{i} * kNewEntry;
    auto key = string_at(b, u32(b, e + 4), start + e + 4);
    if (!key) { return key.error(); }
    auto value = string_at(b, u32(b, e + 8), start + e + 8);
    if (!value) { return value.error(); }
    out.push_back({std::move(*key), std::move(*value), u32(b, e)});
  }
  return out;
}

std::vector<LdCacheEntry> parse_ldconfig_p(std::string_view text) {
  std::vector<LdCacheEntry> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    const auto arrow = line.find(" => ");
    const auto open = line.find(" (");
    if (arrow == std::string::npos || open == std::string::npos || open > arrow) { continue; }
    const auto first = line.find_first_not_of(" \t");
    const auto close = line.rfind(')', arrow);
    if (first >= open || close == std::string::npos || close < open) { continue; }
    LdCacheEntry e;
    e.soname = line.substr(first, open - first);
    e.path = line.substr(arrow + 4);
    while (!e.path.empty() && (e.path.back() == '\r' || e.path.back() == ' ')) { e.path.pop_back(); }
    const std::string abi = line.substr(open + 2, close - open - 2);  // "libc6,x86-64" or "libc6,x86-64, OS ABI: …"
    if (abi.rfind("libc6,x86-64", 0) == 0) {
      e.flags = 0x0303;
    } else if (abi.rfind("libc6", 0) == 0) {
      e.flags = 0x0003;
    }
    if (!e.soname.empty() && !e.path.empty()) { out.push_back(std::move(e)); }
  }
  return out;
}

}  // namespace p2pnode::nvidia
