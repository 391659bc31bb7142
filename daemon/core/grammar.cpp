#include "core/grammar.hpp"

#include <array>
#include <cstdio>

namespace p2pnode::grammar {
namespace {

bool all_of(std::string_view s, std::string_view allowed_punct) {
  for (char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && allowed_punct.find(c) == std::string_view::npos) { return false; }
  }
  return true;
}
bool lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// RFC 3986's unreserved, gen-delims and sub-delims and '%', less ' $ (and ", `, \, blanks, which it
// does not have): what a URL may hold unencoded here.
constexpr std::string_view kUrlPunct = "-._~:/?#[]@!&()*+,;=%";

}  // namespace

std::optional<std::size_t> find_control_char(std::string_view s, std::string_view allow) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 || c == 0x7f) && allow.find(s[i]) == std::string_view::npos) { return i; }
    // C1 controls U+0080-U+009F (C2 80-C2 9F): NEL ends a line for some readers, CSI starts a
    // terminal escape like ESC [.
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F &&
        static_cast<unsigned char>(s[i + 1]) >= 0x80) {
      return i;
    }
  }
  return std::nullopt;
}

std::string describe_control_char(std::string_view s, std::size_t at) {
  const auto c = static_cast<unsigned char>(s.at(at));
  const unsigned code = c == 0xC2 && at + 1 < s.size() ? static_cast<unsigned char>(s[at + 1]) : c;
  std::array<char, 8> hex{};
  std::snprintf(hex.data(), hex.size(), "%04X", code);
  std::string name = code == '\n'   ? " (a newline)"
                     : code == '\r' ? " (a carriage return)"
                     : code == '\t' ? " (a tab)"
                     : code == 0x85 ? " (a C1 next-line)"
                     : code >= 0x80 ? " (a C1 control)"
                                    : "";
  return std::string("U+") + hex.data() + name;
}

bool is_dkms_name(std::string_view s) {
  return !s.empty() && s.size() <= 64 && lower_or_digit(s.front()) &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._+-") == std::string_view::npos &&
         s.find("..") == std::string_view::npos;
}

bool is_nvreg_key(std::string_view s) {
  return s.size() > 6 && s.size() <= 128 && starts_with(s, "NVreg_") && all_of(s.substr(6), "_");
}

bool is_nvreg_value(std::string_view s) { return !s.empty() && s.size() <= 1024 && all_of(s, "_.,;:=+/@\"-"); }

bool is_unit_name(std::string_view s) {
  static constexpr std::array<std::string_view, 11> kTypes = {".service", ".socket", ".target",   ".timer",
                                                              ".mount",   ".path",   ".scope",    ".slice",
                                                              ".device",  ".swap",   ".automount"};
  if (s.empty() || s.size() > 255 || s.front() == '-' || s.front() == '.') { return false; }
  if (!all_of(s, "_:@\\.-")) { return false; }
  for (auto t : kTypes) {
    if (s.size() > t.size() && ends_with(s, t)) { return true; }
  }
  return false;
}

bool is_debian_package(std::string_view s) {
  return s.size() >= 2 && lower_or_digit(s.front()) &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+.-") == std::string_view::npos;
}

bool is_http_url(std::string_view s) {
  std::string_view rest;
  if (starts_with(s, "https://")) {
    rest = s.substr(8);
  } else if (starts_with(s, "http://")) {
    rest = s.substr(7);
  } else {
    return false;
  }
  if (rest.empty() || rest.front() == '/' || s.size() > 4096) { return false; }
  return all_of(rest, kUrlPunct);
}

bool is_git_source(std::string_view s) {
  if (s.empty() || s.size() > 4096 || s.front() == '-' || !all_of(s, kUrlPunct)) { return false; }
  // git reads a leading run of scheme characters followed by "::" as a remote helper to run
  // (transport.c): ext::, fd::, and any helper on PATH.
  const auto scheme_end = s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
  if (scheme_end != std::string_view::npos && s.substr(scheme_end, 2) == "::") { return false; }
  for (std::string_view scheme : {"https://", "http://", "ssh://", "git://", "file:///"}) {
    if (starts_with(s, scheme)) { return s.size() > scheme.size(); }
  }
  if (s.front() == '/') { return is_safe_absolute_path(s); }
  // scp-like user@host:path, as git reads it: a ':' before any '/'.
  const auto colon = s.find(':');
  return colon != std::string_view::npos && colon > 0 && s.find('/') > colon && colon + 1 < s.size();
}

bool is_git_ref(std::string_view s) {
  if (s.empty() || s.size() > 255 || !all_of(s, "._/+-")) { return false; }
  const char f = s.front();
  if (!((f >= 'a' && f <= 'z') || (f >= 'A' && f <= 'Z') || (f >= '0' && f <= '9'))) { return false; }
  return s.find("..") == std::string_view::npos && s.find("//") == std::string_view::npos && s.back() != '/' &&
         s.back() != '.' && !ends_with(s, ".lock") && s.find("/.") == std::string_view::npos;
}

bool is_safe_absolute_path(std::string_view s) {
  if (s.empty() || s.front() != '/' || s.size() > 4096 || !all_of(s, "._+@:/-")) { return false; }
  std::size_t i = 1;
  while (i <= s.size()) {
    const auto j = std::min(s.find('/', i), s.size());
    const auto part = s.substr(i, j - i);
    if (part == "." || part == "..") { return false; }
    i = j + 1;
  }
  return true;
}

bool is_safe_file_name(std::string_view s) {
  return !s.empty() && s.size() <= 255 && s != "." && s != ".." && s.front() != '-' && all_of(s, "._+-");
}

bool stays_under(const std::filesystem::path& dir, const std::filesystem::path& path) {
  if (dir.is_absolute() != path.is_absolute()) { return false; }
  const auto rel = path.lexically_normal().lexically_relative(dir.lexically_normal());
  return !rel.empty() && rel != "." && *rel.begin() != "..";
}

std::string redact_url(std::string_view url) {
  const auto scheme = url.find("://");
  const auto start = scheme == std::string_view::npos ? 0 : scheme + 3;
  std::string out(url.substr(0, start));
  std::string_view rest = url.substr(start);
  const auto cut = rest.find_first_of("?#");
  const bool had_more = cut != std::string_view::npos;
  rest = rest.substr(0, cut);
  const auto slash = rest.find('/');
  const auto at = rest.substr(0, slash).rfind('@');
  if (at != std::string_view::npos) { rest.remove_prefix(at + 1); }
  out += rest;
  return had_more ? out + "?…" : out;
}

std::string redact_userinfo(std::string_view text) {
  std::string out;
  std::size_t from = 0;
  for (auto at = text.find("://"); at != std::string_view::npos; at = text.find("://", from)) {
    const std::size_t host = at + 3;
    out += text.substr(from, host - from);
    // The authority ends at the path, query, fragment, a blank or a quote.
    const auto end = std::min(text.find_first_of("/?#'\" \t\r\n", host), text.size());
    const auto user = text.substr(host, end - host).rfind('@');
    from = user == std::string_view::npos ? host : host + user + 1;
  }
  out += text.substr(from);
  return out;
}

bool is_installer_flag(std::string_view s) {
  for (const auto f : kInstallerFlags) {
    if (s == f) { return true; }
  }
  return false;
}

std::string shell_quote(std::string_view v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string shell_comment_text(std::string_view v) {
  std::string out(v);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) { c = ' '; }
  }
  return out;
}

bool survives_dkms_resource(std::string_view v) {
  if (find_control_char(v) || v.find_first_of("`\"") != std::string_view::npos) { return false; }
  for (std::size_t i = 0; i < v.size(); ++i) {
    const char next = i + 1 < v.size() ? v[i + 1] : '\0';
    // Inside "…" a $ before ) or | or the end is literal (a regex's end anchor: "([.-]|$)").
    if (v[i] == '$' && next != ')' && next != '|' && next != '\0') { return false; }
    // A \ escapes only $ ` " \ and a newline inside "…", and one at the end would eat the quote.
    if (v[i] == '\\' && (next == '\0' || std::string_view("$`\"\\").find(next) != std::string_view::npos)) {
      return false;
    }
  }
  return true;
}

}  // namespace p2pnode::grammar
