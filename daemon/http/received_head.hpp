#pragma once
// The head of a request as libmicrohttpd parsed it, read off its connection and judged
// (request_head.hpp; with libmicrohttpd 0.9, also head_layout.hpp). Called once per request, when
// the head is complete and before its body is read.
#include <microhttpd.h>

#include <cstddef>
#include <optional>
#include <string>

#include "http/request_head.hpp"

namespace p2pnode::http {

// The request-target as MHD_OPTION_URI_LOG_CALLBACK saw it: where it lay and a copy, taken before
// libmicrohttpd cuts the query off and decodes it in place (up to a NUL, as a C string).
struct TargetSeen {
  const char* at = nullptr;
  std::string text;
};

// The first rule the head on `c` breaks, or nullopt. `method` and `version` are what the access
// handler was given.
std::optional<Refusal> refuse_received_head(MHD_Connection* c, const char* method, const char* version,
                                            const TargetSeen& target);

}  // namespace p2pnode::http
