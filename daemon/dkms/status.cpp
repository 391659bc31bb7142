#include "dkms/status.hpp"

#include <sstream>

#include "core/text.hpp"

namespace p2pnode::dkms {
namespace {
std::string trim(std::string_view s) { return std::string(p2pnode::trim(s, " \t\r")); }

std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto c = s.find(',', start);
    out.push_back(trim(s.substr(start, c == std::string_view::npos ? std::string_view::npos : c - start)));
    if (c == std::string_view::npos) { break; }
    start = c + 1;
  }
  return out;
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) { out.push_back(line); }
  return out;
}
}  // namespace

std::optional<StatusEntry> parse_status_line(std::string_view line) {
  // The state follows the last ": " (kernel names hold no colon-space).
  const auto colon = line.rfind(": ");
  if (colon == std::string_view::npos) { return std::nullopt; }
  const auto fields = split_commas(line.substr(0, colon));
  std::string rest = trim(line.substr(colon + 2));
  StatusEntry e;
  std::vector<std::string> f = fields;
  if (!f.empty() && f[0].find('/') != std::string::npos) {  // new: name/version
    const auto slash = f[0].find('/');
    e.module = f[0].substr(0, slash);
    e.version = f[0].substr(slash + 1);
    f.erase(f.begin());
  } else if (f.size() >= 2) {  // old: name, version
    e.module = f[0];
    e.version = f[1];
    f.erase(f.begin(), f.begin() + 2);
  } else {
    return std::nullopt;
  }
  if (f.size() == 2) {
    e.kernel = f[0];
    e.arch = f[1];
  } else if (!f.empty()) {
    return std::nullopt;
  }
  const auto space = rest.find(' ');
  e.state = rest.substr(0, space);
  if (space != std::string::npos) { e.note = trim(rest.substr(space + 1)); }
  static const char* kStates[] = {"added", "built", "installed", "installed-weak", "broken"};
  bool known = false;
  for (const char* s : kStates) { known |= e.state == s; }
  if (!known || e.module.empty() || e.version.empty() || e.module.find(' ') != std::string::npos) {
    return std::nullopt;
  }
  if (e.state != "added" && e.state != "broken" && e.kernel.empty()) { return std::nullopt; }
  return e;
}

std::vector<StatusEntry> parse_status(std::string_view text) {
  std::vector<StatusEntry> out;
  for (const auto& l : lines_of(text)) {
    if (auto e = parse_status_line(l)) { out.push_back(*e); }
  }
  return out;
}

std::string exit_code_meaning(int code) {
  switch (code) {
    case 0: return "success";
    case 1: return "not run as root, no write access, or a missing argument";
    case 2: return "unknown option or the source directory is missing";
    case 3: return "already added or built, or not in the DKMS tree";
    case 4: return "dkms.conf is missing or the module is broken";
    case 5: return "a PATCH[] file is missing or its path is invalid";
    case 6: return "a patch did not apply (or install was aborted and rolled back)";
    case 7: return "a built module file is missing after make";
    case 8: return "dkms.conf is invalid, or the source tree is empty";
    case 10: return "the module build failed (make returned non-zero)";
    case 11: return "autoinstall failed for a module";
    case 13: return "a BUILD_DEPENDS module is missing";
    case 21: return "the kernel headers for this kernel are not installed";
    case 77: return "skipped: BUILD_EXCLUSIVE in dkms.conf excludes this kernel";
    case 101: return "the PRE_INSTALL script failed";
    default: return "DKMS error";
  }
}

std::optional<std::string> first_compiler_error(std::string_view log) {
  const auto lines = lines_of(log);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    if (l.find(": error: ") != std::string::npos || l.find(": fatal error: ") != std::string::npos ||
        l.find("undefined reference to") != std::string::npos || l.find("ERROR: modpost:") != std::string::npos) {
      std::string out;
      if (i > 0 && (lines[i - 1].find("In function") != std::string::npos ||
                    lines[i - 1].find("In file included") != std::string::npos)) {
        out = trim(lines[i - 1]) + "\n";
      }
      return out + trim(l);
    }
  }
  for (const auto& l : lines) {  // no compiler diagnostic: make's own failure line
    if (l.find("*** ") != std::string::npos && l.find("Error") != std::string::npos) { return trim(l); }
  }
  return std::nullopt;
}

std::string tail_lines(std::string_view text, std::size_t n) {
  auto lines = lines_of(text);
  while (!lines.empty() && trim(lines.back()).empty()) { lines.pop_back(); }
  const std::size_t from = lines.size() > n ? lines.size() - n : 0;
  std::string out;
  for (std::size_t i = from; i < lines.size(); ++i) { out += lines[i] + "\n"; }
  return out;
}

std::optional<std::string> dkms_failure_line(std::string_view out) {
  for (const auto& l : lines_of(out)) {
    const std::string t = trim(l);
    if (t.rfind("Error!", 0) == 0 || t.find("Application of patch") != std::string::npos ||
        t.find("Bad return status") != std::string::npos || t.find("patch failed") != std::string::npos) {
      return t;
    }
  }
  return std::nullopt;
}

}  // namespace p2pnode::dkms
