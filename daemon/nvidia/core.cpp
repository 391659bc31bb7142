#include "nvidia/core.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "nvidia/sha256.hpp"

namespace p2pnode::nvidia {
namespace {

// "a/kernel-open/x.c\t2024-…" -> "kernel-open/x.c" (one leading component stripped, as -p1).
std::string strip1(std::string_view field) {
  const auto end = field.find_first_of("\t");
  field = field.substr(0, end);
  while (!field.empty() && (field.back() == ' ' || field.back() == '\r')) { field.remove_suffix(1); }
  if (field == "/dev/null") { return {}; }
  const auto slash = field.find('/');
  return slash == std::string_view::npos ? std::string(field) : std::string(field.substr(slash + 1));
}

}  // namespace

// "@@ -12,7 +12,8 @@" -> the old and new line counts (a missing count is 1).
bool hunk_counts(std::string_view line, long& old_n, long& new_n) {
  auto count = [](std::string_view s, char sign, long& n) {
    const auto p = s.find(sign);
    if (p == std::string_view::npos) { return false; }
    s.remove_prefix(p + 1);
    const auto end = s.find(' ');
    const auto range = s.substr(0, end);
    const auto comma = range.find(',');
    if (comma == std::string_view::npos) {
      n = 1;
      return true;
    }
    const auto digits = range.substr(comma + 1);
    return std::from_chars(digits.data(), digits.data() + digits.size(), n).ec == std::errc{};
  };
  return count(line.substr(2), '-', old_n) && count(line.substr(2), '+', new_n);
}

std::vector<std::string> patched_paths(std::string_view diff) {
  std::vector<std::string> out;
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos < diff.size();) {
    const auto nl = diff.find('\n', pos);
    lines.push_back(diff.substr(pos, (nl == std::string_view::npos ? diff.size() : nl) - pos));
    pos = nl == std::string_view::npos ? diff.size() : nl + 1;
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto line = lines[i];
    if (line.rfind("@@ ", 0) == 0) {  // skip the hunk's body, whose lines may start with "---"/"+++"
      long old_n = 0, new_n = 0;
      if (!hunk_counts(line, old_n, new_n)) { continue; }
      while ((old_n > 0 || new_n > 0) && i + 1 < lines.size()) {
        const auto body = lines[++i];
        const char c = body.empty() ? ' ' : body[0];
        if (c == '\\') {
          continue;  // "\ No newline at end of file"
        }
        if (c != '+') { --old_n; }
        if (c != '-') { --new_n; }
      }
      continue;
    }
    if (line.rfind("--- ", 0) != 0 || i + 1 >= lines.size() || lines[i + 1].rfind("+++ ", 0) != 0) { continue; }
    std::string path = strip1(lines[i + 1].substr(4));
    if (path.empty()) {
      path = strip1(line.substr(4));  // a deleted file: +++ /dev/null
    }
    if (!path.empty() && std::find(out.begin(), out.end(), path) == out.end()) { out.push_back(path); }
    ++i;
  }
  return out;
}

bool in_kernel_layer(std::string_view path) { return path.rfind("kernel-open/", 0) == 0; }

CoreDecision decide_core(const std::vector<CorePatch>& patches) {
  CoreDecision d;
  d.reuse = true;
  for (std::size_t i = 0; i < patches.size(); ++i) {
    const auto& p = patches[i];
    const auto paths = patched_paths(p.text);
    if (paths.empty()) {
      d.reuse = false;
      d.why_not = "patch " + p.name + " names no file p2pnode can read, so it may change the core";
      return d;
    }
    const auto core = std::find_if(paths.begin(), paths.end(), [](const auto& s) { return !in_kernel_layer(s); });
    if (core == paths.end()) { continue; }
    if (!p.match.empty()) {
      d.reuse = false;
      d.why_not = "patch " + p.name + " changes " + *core +
                  " (the kernel-independent core) but only for kernels matching " + p.match +
                  ", so the core differs between kernels";
      return d;
    }
    d.apply.push_back(i);
  }
  return d;
}

std::string core_key(const CoreInputs& in) {
  std::ostringstream o;
  o << "p2pnode-nvidia-core-v1\nsource " << in.source_sha256 << "\n";
  for (const auto& p : in.patch_sha256) { o << "patch " << p << "\n"; }
  o << "cc " << in.compiler << "\nld " << in.linker << "\narch " << in.arch << "\n";
  return sha256_hex(o.str());
}

}  // namespace p2pnode::nvidia
