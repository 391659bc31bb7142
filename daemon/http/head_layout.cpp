#include "http/head_layout.hpp"

namespace p2pnode::http {
namespace {

// A piece [at, at + size) lies inside the head; an obs-fold's name was copied out of it.
bool inside_head(const HeadLayout& l, std::size_t at, std::size_t size) { return at <= l.size && size <= l.size - at; }

// Between the end of a line's last piece and the next line: its CRLF or bare LF, nothing else.
bool only_a_line_break(std::size_t end, std::size_t next) { return next >= end + 1 && next <= end + 2; }

Refusal hidden_nul() {
  return Refusal{400,
                 "the request head holds a NUL byte, or its request line is not method, target and version "
                 "each after a single space (RFC 9110 §5.5, RFC 9112 §3)"};
}

}  // namespace

std::optional<Refusal> refuse_hidden_bytes(const HeadLayout& l) {
  if (l.target_at != l.method_size + 1 || l.version_at != l.target_at + l.target_size + 1 ||
      !inside_head(l, l.version_at, l.version_size)) {
    return hidden_nul();
  }
  std::size_t line_end = l.version_at + l.version_size;
  for (const auto& f : l.fields) {
    if (!inside_head(l, f.name_at, f.name_size) || !inside_head(l, f.value_at, f.value_size)) {
      return Refusal{400, "a header field is folded over two lines (obs-fold, RFC 9112 §5.2)"};
    }
    if (!only_a_line_break(line_end, f.name_at) || f.value_at <= f.name_at + f.name_size) { return hidden_nul(); }
    line_end = f.value_at + f.value_size;
  }
  // The last line's break, then the empty line's: two to four bytes.
  if (l.size < line_end + 2 || l.size > line_end + 4) { return hidden_nul(); }
  return std::nullopt;
}

}  // namespace p2pnode::http
