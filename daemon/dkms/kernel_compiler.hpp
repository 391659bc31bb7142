#pragma once
// The compiler a kernel's headers were made with (CONFIG_CC_VERSION_TEXT in include/config/auto.conf
// or include/generated/autoconf.h), which DKMS needs to build for that kernel: Debian's and
// Ubuntu's headers name it (CC = x86_64-linux-gnu-gcc-14), and a build without it fails ("gcc-14
// not found"). Pure: callers pass the file's text.
#include <optional>
#include <regex>
#include <string>
#include <string_view>

namespace p2pnode::dkms {

struct KernelCompiler {
  std::string text;        // x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0
  std::string command;     // x86_64-linux-gnu-gcc-14: what Kbuild runs
  std::string short_name;  // gcc-14 (the command without the target triplet)
  std::string package;     // gcc-14: the Debian/Ubuntu package that installs the command; "" when unknown
};

// From either file's text; nullopt when it has no CONFIG_CC_VERSION_TEXT. (Inline: small, and
// kept out of the unity build's file list.)
inline std::optional<KernelCompiler> decode_kernel_compiler(std::string_view text) {
  // auto.conf: CONFIG_CC_VERSION_TEXT="…" (or unquoted); autoconf.h: #define CONFIG_CC_VERSION_TEXT "…"
  static const std::regex line(
      R"re((?:^|\n)(?:#define CONFIG_CC_VERSION_TEXT |CONFIG_CC_VERSION_TEXT=)"?([^"\n]*)"?)re");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(text.begin(), text.end(), m, line)) { return std::nullopt; }
  KernelCompiler c;
  c.text = m[1].str();
  c.command = c.text.substr(0, c.text.find(' '));
  if (c.command.empty()) { return std::nullopt; }
  // x86_64-linux-gnu-gcc-14 -> gcc-14; clang-19 stays clang-19.
  static const std::regex triplet(R"(^[a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+-((?:gcc|clang)(?:-[0-9]+)?)$)");
  std::smatch t;
  c.short_name = std::regex_match(c.command, t, triplet) ? t[1].str() : c.command;
  // Debian and Ubuntu package gcc-N as gcc-N (clang-N as clang-N); a plain "gcc" is the gcc package.
  static const std::regex known(R"(^(gcc|clang)(-[0-9]+)?$)");
  if (std::regex_match(c.short_name, known)) { c.package = c.short_name; }
  return c;
}

}  // namespace p2pnode::dkms
