#pragma once
// A request head as the HTTP parser handed it over, judged against RFC 9110 and RFC 9112 before the
// request goes on to the daemon: what libmicrohttpd lets through and the routes must never see. A
// method that is no token, a control byte in a field, no Host or two, Content-Length values that
// differ or stand beside Transfer-Encoding are refused here with 400 (an unknown transfer coding
// with 501). Pure: tested on strings (tests/unit/http/request_head_test.cpp).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode::http {

struct HeadField {
  std::string_view name;
  std::string_view value;
};

struct RequestHead {
  std::string_view method;
  std::string_view target;        // the request-target as received, before any decoding
  std::string_view version;       // "HTTP/1.1"
  std::vector<HeadField> fields;  // in the order received: a repeated name once per line
};

// Why a request is answered with an error instead of a route: the status and a sentence for the
// client.
struct Refusal {
  int status = 400;
  std::string detail;
};

// The first rule the head breaks, or nullopt when it may be routed.
std::optional<Refusal> refuse_head(const RequestHead& head);

// RFC 9110 §5.6.2: 1*tchar.
bool is_token(std::string_view s);
// RFC 9110 §5.5: a byte no field value may hold (NUL, CR, LF, the other C0 controls but HTAB, DEL).
bool has_control_character(std::string_view field_value);

}  // namespace p2pnode::http
