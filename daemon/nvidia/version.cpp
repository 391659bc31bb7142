#include "nvidia/version.hpp"

#include "core/driver_version.hpp"

#include <sstream>

namespace p2pnode::nvidia {

bool looks_like_version(std::string_view v) { return is_driver_version(v); }

std::optional<ProcVersion> parse_proc_version(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  std::optional<ProcVersion> out;
  while (std::getline(in, line)) {
    if (line.rfind("NVRM version:", 0) == 0) {
      ProcVersion v;
      v.line = line;
      v.open = line.find("Open Kernel Module") != std::string::npos;
      std::istringstream words(line);
      std::string w;
      while (words >> w) {
        if (v.version.empty() && looks_like_version(w)) { v.version = w; }
        if (w.size() > 2 && w.front() == '(' && w.back() == ')' && w.find('@') != std::string::npos) {
          v.builder = w.substr(1, w.size() - 2);
          if (v.builder.back() == '@') { v.builder.pop_back(); }
        }
      }
      if (v.version.empty()) { return std::nullopt; }
      out = v;
    } else if (out && line.rfind("GCC version:", 0) == 0) {
      out->gcc = line.substr(12);
      while (!out->gcc.empty() && out->gcc.front() == ' ') { out->gcc.erase(0, 1); }
    }
  }
  return out;
}

std::map<std::string, std::string> parse_modprobe_options(std::string_view text, std::string_view module) {
  std::map<std::string, std::string> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) { line.resize(hash); }
    std::istringstream words(line);
    std::string cmd, mod, kv;
    if (!(words >> cmd >> mod) || cmd != "options" || mod != module) { continue; }
    while (words >> kv) {
      const auto eq = kv.find('=');
      if (eq != std::string::npos) { out[kv.substr(0, eq)] = kv.substr(eq + 1); }
    }
  }
  return out;
}

SmiReport parse_smi_driver_versions(std::string_view out) {
  SmiReport r;
  std::istringstream in{std::string(out)};
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) { line.pop_back(); }
    if (line.empty()) { continue; }
    if (looks_like_version(line)) {
      r.versions.push_back(line);
    } else if (r.problem.empty()) {
      r.problem = line.substr(0, 200);
    }
  }
  if (r.versions.empty() && r.problem.empty()) { r.problem = "no output"; }
  return r;
}

}  // namespace p2pnode::nvidia
