#include "http/request_head.hpp"

#include <algorithm>

#include "http/host_check.hpp"

namespace p2pnode::http {
namespace {

bool is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) { return true; }
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// RFC 9110 §5.5: a field value is VCHAR, obs-text, SP and HTAB; NUL, CR, LF and the rest are not.
bool is_control(char ch) {
  const auto c = static_cast<unsigned char>(ch);
  return (c < 0x20 && c != '\t') || c == 0x7f;
}

bool equals_nocase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           const auto lx = static_cast<unsigned char>(x), ly = static_cast<unsigned char>(y);
           return (lx >= 'A' && lx <= 'Z' ? lx + 32 : lx) == (ly >= 'A' && ly <= 'Z' ? ly + 32 : ly);
         });
}

std::string_view trim_ows(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) { v.remove_prefix(1); }
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) { v.remove_suffix(1); }
  return v;
}

// The elements of a comma-separated list (RFC 9110 §5.6.1), empty ones skipped.
std::vector<std::string_view> list_elements(std::string_view v) {
  std::vector<std::string_view> out;
  while (!v.empty()) {
    const auto comma = v.find(',');
    if (auto e = trim_ows(v.substr(0, comma)); !e.empty()) { out.push_back(e); }
    if (comma == std::string_view::npos) { break; }
    v.remove_prefix(comma + 1);
  }
  return out;
}

std::optional<Refusal> bad_request(std::string detail) { return Refusal{400, std::move(detail)}; }

std::optional<Refusal> refuse_request_line(const RequestHead& h) {
  if (!is_token(h.method)) {
    return bad_request("the method is not a token (RFC 9110 §9.1): letters, digits and !#$%&'*+-.^_`|~ only");
  }
  if (h.target.empty()) { return bad_request("the request line has no target"); }
  for (char ch : h.target) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) {
      return bad_request("the request-target holds a space or a control character (RFC 9112 §3.2)");
    }
  }
  return std::nullopt;
}

std::optional<Refusal> refuse_fields(const RequestHead& h) {
  for (const auto& f : h.fields) {
    if (!is_token(f.name)) { return bad_request("a header field name is not a token (RFC 9110 §5.1)"); }
    if (has_control_character(f.value)) {
      return bad_request("the header field " + std::string(f.name.substr(0, 64)) +
                         " holds a control character: NUL, CR, LF and the like are not allowed (RFC 9110 §5.5)");
    }
  }
  return std::nullopt;
}

// RFC 9112 §3.2: no Host in HTTP/1.1, more than one, or one that is not a host and port.
std::optional<Refusal> refuse_host(const RequestHead& h) {
  std::vector<std::string_view> hosts;
  for (const auto& f : h.fields) {
    if (equals_nocase(f.name, "host")) { hosts.push_back(f.value); }
  }
  if (hosts.size() > 1) { return bad_request("more than one Host header field (RFC 9112 §3.2)"); }
  if (hosts.empty()) {
    return h.version == "HTTP/1.0" ? std::nullopt
                                   : bad_request("an HTTP/1.1 request without a Host header field (RFC 9112 §3.2)");
  }
  // An empty Host is well-formed; the daemon's Host check answers it (421).
  const auto v = trim_ows(hosts.front());
  if (!v.empty() && host_of_header(v).empty()) {
    return bad_request("the Host header field is not a host with an optional port (RFC 9112 §3.2)");
  }
  return std::nullopt;
}

// RFC 9112 §6: one way to find where the body ends, or none. Differing Content-Length values, or
// one beside Transfer-Encoding, are how a request is smuggled past a proxy that reads the other.
std::optional<Refusal> refuse_framing(const RequestHead& h) {
  std::optional<std::string_view> length;
  std::vector<std::string_view> codings;
  bool transfer_encoding = false;
  for (const auto& f : h.fields) {
    if (equals_nocase(f.name, "content-length")) {
      const auto v = trim_ows(f.value);
      if (v.empty() || v.find_first_not_of("0123456789") != std::string_view::npos) {
        return bad_request("Content-Length is not a number (RFC 9110 §8.6)");
      }
      if (length && *length != v) { return bad_request("Content-Length values differ (RFC 9112 §6.3)"); }
      length = v;
    } else if (equals_nocase(f.name, "transfer-encoding")) {
      transfer_encoding = true;
      for (auto c : list_elements(f.value)) { codings.push_back(c); }
    }
  }
  if (!transfer_encoding) { return std::nullopt; }
  // RFC 9112 §6.3 lets Transfer-Encoding win; no request here needs a chunked body, so both is an error.
  if (length) { return bad_request("Content-Length together with Transfer-Encoding (RFC 9112 §6.3)"); }
  if (h.version == "HTTP/1.0") { return bad_request("Transfer-Encoding in an HTTP/1.0 request (RFC 9112 §6.1)"); }
  if (codings.empty() || !equals_nocase(codings.back(), "chunked")) {
    return bad_request("chunked is not the final transfer coding (RFC 9112 §6.1)");
  }
  if (codings.size() > 1) { return Refusal{501, "the only transfer coding accepted is chunked"}; }
  return std::nullopt;
}

}  // namespace

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

bool has_control_character(std::string_view field_value) {
  return std::any_of(field_value.begin(), field_value.end(), is_control);
}

std::optional<Refusal> refuse_head(const RequestHead& head) {
  if (auto r = refuse_request_line(head)) { return r; }
  if (auto r = refuse_fields(head)) { return r; }
  if (auto r = refuse_host(head)) { return r; }
  return refuse_framing(head);
}

}  // namespace p2pnode::http
