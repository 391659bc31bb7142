#include "profile/input_rules.hpp"

#include <array>
#include <cstdio>

#include "core/grammar.hpp"

namespace p2pnode::profile {
namespace {

void walk(const YAML::Node& n, const std::string& path, Diagnostics& diag) {
  auto check = [&](const YAML::Node& at, const std::string& where, const std::string& s, std::string_view allow) {
    if (const auto i = grammar::find_control_char(s, allow)) {
      diag.add(at, where,
               "expected no control characters, found " + grammar::describe_control_char(s, *i) + " at byte " +
                   std::to_string(*i) + " of '" + printable(s) + "'");
    }
  };
  if (n.IsScalar()) {
    check(n, path, n.Scalar(), path == "metadata.description" ? std::string_view("\n\t") : std::string_view());
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) { walk(n[i], path + "[" + std::to_string(i) + "]", diag); }
  } else if (n.IsMap()) {
    for (const auto& kv : n) {
      const std::string key = kv.first.IsScalar() ? printable(kv.first.Scalar()) : "?";
      const std::string child = path.empty() ? key : path + "." + key;
      if (kv.first.IsScalar()) { check(kv.first, child, kv.first.Scalar(), {}); }
      walk(kv.second, child, diag);
    }
  }
}

}  // namespace

void check_no_control_chars(const YAML::Node& doc, Diagnostics& diag) { walk(doc, "", diag); }

std::string printable(std::string_view s) {
  std::string out;
  const std::string_view head = s.substr(0, 200);
  for (std::size_t i = 0; i < head.size(); ++i) {
    const char c = head[i];
    const auto u = static_cast<unsigned char>(c);
    const auto next = i + 1 < head.size() ? static_cast<unsigned char>(head[i + 1]) : 0;
    if (u == 0xC2 && next >= 0x80 && next <= 0x9F) {  // a C1 control: shown, never sent to a terminal
      std::array<char, 7> hex{};
      std::snprintf(hex.data(), hex.size(), "\\u%04x", next);
      out += hex.data();
      ++i;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      std::array<char, 5> hex{};
      std::snprintf(hex.data(), hex.size(), "\\x%02x", u);
      out += hex.data();
    } else {
      out += c;
    }
  }
  if (s.size() > 200) { out += "…"; }
  return out;
}

bool expect_string(MapReader& m, std::string_view key, const std::function<bool(std::string_view)>& ok,
                   const std::string& expected, bool is_url) {
  const YAML::Node n = m.get(key);
  if (!n.IsDefined() || !n.IsScalar()) { return true; }
  if (ok(n.Scalar())) { return true; }
  // A URL's user info (a token in a git or download URL) never reaches the message or the journal.
  const std::string shown = is_url ? grammar::redact_userinfo(n.Scalar()) : n.Scalar();
  m.diag().add(n, m.child_path(key), "expected " + expected + ", found '" + printable(shown) + "'");
  return false;
}

}  // namespace p2pnode::profile
