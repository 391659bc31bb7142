#pragma once
// Small text helpers shared by the decoders.
#include <string_view>

namespace p2pnode {

// What std::isspace calls a space in the C locale.
inline constexpr std::string_view kSpaces = " \t\n\v\f\r";

// `s` without the leading and trailing characters of `blanks` (spaces, tabs, CR and LF unless told).
inline std::string_view trim(std::string_view s, std::string_view blanks = " \t\r\n") {
  const auto b = s.find_first_not_of(blanks);
  if (b == std::string_view::npos) { return {}; }
  return s.substr(b, s.find_last_not_of(blanks) - b + 1);
}

}  // namespace p2pnode
