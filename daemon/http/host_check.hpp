#pragma once
// Which Host headers the API answers: a page another site serves can make a browser on this host
// send requests here under that site's name (DNS rebinding); a Host that names neither an address
// nor one of this daemon's names is answered 421 before any route runs. Pure.
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode::http {

// The host of a Host header without its port, lower-cased: "[::1]:9470" -> "::1", "Node:80" -> "node";
// empty when the header is malformed (a blank, a control character, an unclosed bracket, a bad port).
std::string host_of_header(std::string_view host_header);

// True when `host_header` is absent (HTTP/1.0 clients), an IP address literal, "localhost", or one
// of `names` (compared without case; "*.example.org" matches one or more labels before .example.org).
bool host_allowed(std::string_view host_header, bool present, const std::vector<std::string>& names);

}  // namespace p2pnode::http
