#include "lifecycle/module_conflicts.hpp"

#include <algorithm>

namespace p2pnode::lifecycle {
namespace {

// Modules named like ours outside updates/dkms (stale copies modprobe could pick), in-root paths.
void find_stale(const sys::SysRoot& root, const std::string& dir, const std::vector<std::string>& modules,
                std::vector<std::string>& out, int depth = 0) {
  if (depth > 8) { return; }
  for (const auto& e : root.list_dir(dir)) {
    const std::string p = sys::join(dir, e);
    if (root.is_dir(p)) {
      if (depth == 0 && (e == "build" || e == "source")) { continue; }
      if (p.find("/updates/dkms") != std::string::npos) { continue; }
      find_stale(root, p, modules, out, depth + 1);
      continue;
    }
    for (const auto& m : modules) {
      for (const char* ext : {".ko", ".ko.xz", ".ko.zst", ".ko.gz"}) {
        if (e == m + ext) { out.push_back(p); }
      }
    }
  }
}

}  // namespace

std::vector<std::string> built_names(std::string_view conf) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = conf.find("BUILT_MODULE_NAME[", pos)) != std::string_view::npos) {
    const auto eq = conf.find('=', pos);
    const auto nl = conf.find('\n', pos);
    if (eq == std::string_view::npos) { break; }
    std::string v(conf.substr(eq + 1, (nl == std::string_view::npos ? conf.size() : nl) - eq - 1));
    v.erase(std::remove_if(v.begin(), v.end(), [](char c) { return c == '"' || c == '\'' || c == ' ' || c == '\r'; }),
            v.end());
    out.push_back(v);
    pos = eq;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> other_registrations(const sys::SysRoot& root, const ModuleTarget& t,
                                                                     const std::vector<std::string>& modules) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& dir : root.list_dir("/var/lib/dkms")) {
    for (const auto& ver : root.list_dir(sys::join("/var/lib/dkms", dir))) {
      if (dir == t.name && ver == t.version) { continue; }
      auto conf = root.read_text(sys::join("/var/lib/dkms", dir, ver, "source", "dkms.conf"));
      if (!conf) { continue; }
      bool clash = dir == t.name;
      for (const auto& n : built_names(*conf)) {
        clash = clash || std::find(modules.begin(), modules.end(), n) != modules.end();
      }
      if (clash) { out.emplace_back(dir, ver); }
    }
  }
  return out;
}

std::vector<std::string> stale_modules(const sys::SysRoot& root, const std::vector<std::string>& modules,
                                       const std::vector<std::string>& kernels) {
  std::vector<std::string> out;
  for (const auto& k : kernels) { find_stale(root, sys::join("/lib/modules", k), modules, out); }
  return out;
}

}  // namespace p2pnode::lifecycle
