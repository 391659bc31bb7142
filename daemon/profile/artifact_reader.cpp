#include "profile/artifact_reader.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "core/driver_version.hpp"
#include "core/grammar.hpp"
#include "nvidia/breakage.hpp"
#include "profile/input_rules.hpp"

namespace p2pnode::profile {

std::optional<Artifact> read_artifact_node(const YAML::Node& node, const std::string& path, Diagnostics& diag) {
  MapReader m(node, path, diag, {"path", "url", "git", "branch", "sha256"});
  if (!m.valid()) { return std::nullopt; }
  Artifact a;
  a.path = m.string("path");
  a.url = m.string("url");
  a.git = m.string("git");
  a.branch = m.string("branch");
  const int sources = (a.path ? 1 : 0) + (a.url ? 1 : 0) + (a.git ? 1 : 0);
  if (sources != 1) {
    diag.add(node, path, "expected exactly one of path, url or git; found " + std::to_string(sources));
  }
  expect_string(m, "url", grammar::is_http_url, kUrlRule, true);
  expect_string(m, "git", grammar::is_git_source, kGitRule, true);
  expect_string(m, "branch", grammar::is_git_ref, kGitRefRule);
  expect_string(m, "path", grammar::is_safe_absolute_path, kSafePathRule);
  if (a.branch && !a.git) { diag.add(m.get("branch"), m.child_path("branch"), "branch is only meaningful with git"); }
  if (auto sha = m.string("sha256", true)) {
    const bool hex = sha->size() == 64 && sha->find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!hex) {
      diag.add(m.get("sha256"), m.child_path("sha256"),
               "expected 64 lowercase hex digits (sha256sum's output), found '" + *sha + "'");
    } else {
      a.sha256 = *sha;
    }
  }
  return a;
}

// {builtin: <name>}: a compat patch p2pnode ships (nvidia/breakages.yaml says where it is needed).
std::optional<Artifact> read_builtin_patch(const YAML::Node& node, const std::string& path, Diagnostics& diag) {
  MapReader m(node, path, diag, {"builtin"});
  if (!m.valid()) { return std::nullopt; }
  auto name = m.string("builtin", true);
  if (!name) { return std::nullopt; }
  const auto names = nvidia::builtin_patch_names();
  if (std::find(names.begin(), names.end(), *name) == names.end()) {
    std::string list;
    for (const auto& n : names) { list += (list.empty() ? "" : ", ") + n; }
    diag.add(m.get("builtin"), m.child_path("builtin"),
             "expected the name of a builtin patch (" + list + "), found '" + *name + "'");
    return std::nullopt;
  }
  Artifact a;
  a.builtin = *name;
  return a;
}

// parent.key as an artifact: nullopt when absent; a key written with nothing after it is an error
// naming `what` (require() only sees that the key is there).
std::optional<Artifact> read_artifact(MapReader& parent, std::string_view key, const std::string& what) {
  const YAML::Node n = parent.get(key);
  if (!n.IsDefined()) { return std::nullopt; }
  if (n.IsNull()) {
    parent.diag().add(n, parent.child_path(key), "expected " + what + ": one of path, url or git, with its sha256");
    return std::nullopt;
  }
  return read_artifact_node(n, parent.child_path(key), parent.diag());
}

}  // namespace p2pnode::profile
