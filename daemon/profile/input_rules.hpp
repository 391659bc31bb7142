#pragma once
// The grammar of every profile string that reaches a file, a path or an argument, checked as the
// profile is read: each rule names the field, what it expected and what it found.
#include <functional>
#include <string>
#include <string_view>

#include "profile/yaml_reader.hpp"

namespace p2pnode::profile {

// Every scalar of the document, keys included, is free of control characters (metadata.description
// may hold newlines and tabs: it is only shown); one diagnostic per offending scalar.
void check_no_control_chars(const YAML::Node& doc, Diagnostics& diag);

// The text of a found value for a message: control characters as \n, \t or \xNN, at most 200 bytes.
std::string printable(std::string_view s);

// Adds "expected <expected>, found '<value>'" at m.key when the string there fails `ok`; true when
// absent or good.
bool expect_string(MapReader& m, std::string_view key, const std::function<bool(std::string_view)>& ok,
                   const std::string& expected, bool is_url = false);

inline constexpr const char* kDkmsNameRule =
    "a DKMS package name: a lowercase letter or digit, then [a-z0-9._+-], at most 64";
inline constexpr const char* kSafePathRule =
    "an absolute path of letters, digits and ._+@:/- with no . or .. component";
inline constexpr const char* kUrlRule =
    "an http:// or https:// URL with a host, of letters, digits and -._~:/?#[]@!&()*+,;=% "
    "(percent-encode any other character)";
inline constexpr const char* kGitRule =
    "a git repository: an https://, http://, ssh://, git:// or file:/// URL, user@host:path "
    "or an absolute path, not starting with '-' and never git's <transport>::<address> form "
    "(ext::, fd::), of letters, digits and -._~:/?#[]@!&()*+,;=%";
inline constexpr const char* kGitRefRule = "a git branch or tag: a letter or digit, then [A-Za-z0-9._/+-], no '..'";
inline constexpr const char* kUnitRule =
    "a systemd unit name such as nvidia-persistenced.service: [A-Za-z0-9_:@\\.-] ending in "
    ".service, .socket, .target, .timer, …, not starting with '-'";
inline constexpr const char* kNvregKeyRule = "an NVreg_* module option name: NVreg_ then letters, digits or _";
inline constexpr const char* kNvregValueRule =
    "a module option value of letters, digits and _.,;:=+/@\"- (modprobe.d has no "
    "escapes for blanks, ', '#' or '\\')";
inline constexpr const char* kPatchFileRule =
    "a URL whose last path segment (the patch's file name, which dkms.conf names) "
    "is letters, digits and ._+-";

}  // namespace p2pnode::profile
