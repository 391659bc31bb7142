#pragma once
// Decoders of what DKMS prints: `dkms status` lines, exit codes, make.log. Pure.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode::dkms {

struct StatusEntry {
  std::string module, version;
  std::string kernel, arch;  // empty for "added"
  std::string state;         // added, built, installed, installed-weak, broken
  std::string note;          // "(Original modules exist)", "from 6.1.0-55-amd64", …
};

// Both formats: "nvidia/550.90.07, 6.1.0-56-amd64, x86_64: installed" (DKMS >= 2.8.6) and
// "nvidia, 396.45, 4.17.14-202.fc28.x86_64, x86_64: installed (original_module exists)".
// Lines that are neither (warnings) are skipped.
std::vector<StatusEntry> parse_status(std::string_view text);
std::optional<StatusEntry> parse_status_line(std::string_view line);

// What a dkms exit status means ("10: the module build failed (make returned non-zero)").
std::string exit_code_meaning(int code);

// The first compiler or linker error of a make.log ("nv-pci.c:432:9: error: too few arguments…"),
// with the line before it when that names the function ("In function …").
std::optional<std::string> first_compiler_error(std::string_view make_log);
// The last n lines of a text.
std::string tail_lines(std::string_view text, std::size_t n);
// "Application of patch 0002-x.patch failed" and similar DKMS messages, for reports.
std::optional<std::string> dkms_failure_line(std::string_view dkms_output);

}  // namespace p2pnode::dkms
