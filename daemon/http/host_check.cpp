#include "http/host_check.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace p2pnode::http {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_port(std::string_view p) {
  return !p.empty() && p.size() <= 5 && p.find_first_not_of("0123456789") == std::string_view::npos;
}

bool is_address(const std::string& h) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, h.c_str(), buf) == 1 || ::inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

}  // namespace

std::string host_of_header(std::string_view v) {
  // Optional whitespace around a field value is not part of it (RFC 9110 §5.5).
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) { v.remove_prefix(1); }
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) { v.remove_suffix(1); }
  if (v.empty() || v.size() > 255) { return {}; }
  for (char c : v) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '/' || c == '@' || c == '\\') { return {}; }
  }
  std::string_view host = v;
  if (v.front() == '[') {
    const auto close = v.find(']');
    if (close == std::string_view::npos) { return {}; }
    host = v.substr(1, close - 1);
    const auto rest = v.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !is_port(rest.substr(1)))) { return {}; }
    return is_address(std::string(host)) && host.find(':') != std::string_view::npos ? lower(host) : std::string();
  }
  if (const auto colon = v.rfind(':'); colon != std::string_view::npos) {
    if (v.find(':') != colon || !is_port(v.substr(colon + 1))) { return {}; }
    host = v.substr(0, colon);
  }
  if (host.empty()) { return {}; }
  std::string h = lower(host);
  if (h.back() == '.') {
    h.pop_back();  // "node.example.org." is the same name
  }
  return h;
}

bool host_allowed(std::string_view host_header, bool present, const std::vector<std::string>& names) {
  if (!present) { return true; }
  const std::string h = host_of_header(host_header);
  if (h.empty()) { return false; }
  if (h == "localhost" || is_address(h)) { return true; }
  for (const auto& n : names) {
    const std::string want = lower(n);
    if (want == h) { return true; }
    if (want.size() > 2 && want.compare(0, 2, "*.") == 0 && h.size() > want.size() - 1 &&
        h.compare(h.size() - (want.size() - 1), want.size() - 1, want.substr(1)) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace p2pnode::http
