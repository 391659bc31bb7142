#pragma once
// Bytes libmicrohttpd 0.9 parsed past without a word. It parses a request head in place, in its
// read buffer, and hands each piece over as a C string: it ends the method, the target and the
// version with NUL where their spaces were, a field's name with NUL where its colon was, and every
// line with one NUL per byte of its CRLF (or bare LF). A NUL the client sent inside a line ends that
// C string early: "Authorization: Bearer TOKEN\0junk" reaches the handler as "Bearer TOKEN", and the
// junk is never seen. An obs-fold line is appended to a copy of the field's name made elsewhere in
// its memory pool. Both leave a trace in where the pieces lie: in a clean head they tile the head
// exactly, with one or two bytes between the end of a line and the next. (libmicrohttpd 1.0 refuses
// both itself, with 400: http/server.cpp checks this before it.) Pure: offsets in, a refusal out.
#include <cstddef>
#include <optional>
#include <vector>

#include "http/request_head.hpp"

namespace p2pnode::http {

// Where each piece lies, as offsets from the method's first byte (the head's first byte), and how
// long each C string is.
struct HeadLayout {
  std::size_t size = 0;  // the whole head through its empty line (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE)
  std::size_t method_size = 0;
  std::size_t target_at = 0, target_size = 0;  // as the request line had it, before decoding
  std::size_t version_at = 0, version_size = 0;
  struct Field {
    std::size_t name_at = 0, name_size = 0;
    std::size_t value_at = 0, value_size = 0;
  };
  std::vector<Field> fields;  // in the order received
};

// nullopt when the pieces tile the head; else a 400 that says a NUL or an obs-fold hid bytes.
std::optional<Refusal> refuse_hidden_bytes(const HeadLayout& layout);

}  // namespace p2pnode::http
