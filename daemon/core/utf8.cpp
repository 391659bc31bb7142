#include "core/utf8.hpp"

namespace p2pnode::utf8 {
namespace {

// The length of the valid sequence at s[i], or 0. The second byte's range is what rules out
// overlongs (E0, F0), surrogates (ED) and code points above U+10FFFF (F4); RFC 3629 section 4.
std::size_t sequence_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto c = b(0);
  if (c < 0x80) { return 1; }
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c == 0xE0) {
    n = 3, lo = 0xA0;
  } else if (c >= 0xE1 && c <= 0xEC) {
    n = 3;
  } else if (c == 0xED) {
    n = 3, hi = 0x9F;
  } else if (c >= 0xEE && c <= 0xEF) {
    n = 3;
  } else if (c == 0xF0) {
    n = 4, lo = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) {
    n = 4;
  } else if (c == 0xF4) {
    n = 4, hi = 0x8F;
  } else {
    return 0;  // 80-C1 (a continuation or an overlong lead), F5-FF
  }
  if (i + n > s.size()) { return 0; }
  if (b(1) < lo || b(1) > hi) { return 0; }
  for (std::size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xBF) { return 0; }
  }
  return n;
}

}  // namespace

std::optional<std::size_t> first_invalid(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = sequence_length(s, i);
    if (n == 0) { return i; }
    i += n;
  }
  return std::nullopt;
}

std::string make_valid(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace p2pnode::utf8
