#pragma once
// UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates (U+D800-U+DFFF), nothing above
// U+10FFFF. What p2pnode reads from a file or from the machine is held to it before it reaches JSON
// (nlohmann throws on anything else) or a message. Pure: no I/O.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace p2pnode::utf8 {

// The byte offset where `s` stops being valid UTF-8, or nullopt when all of it is.
std::optional<std::size_t> first_invalid(std::string_view s);
inline bool valid(std::string_view s) { return !first_invalid(s).has_value(); }

// `s` with each byte that does not start a valid sequence replaced by U+FFFD: text read from the
// machine (a hostname, a model name, a kernel log line) made safe to show and to serialise.
std::string make_valid(std::string_view s);

}  // namespace p2pnode::utf8
