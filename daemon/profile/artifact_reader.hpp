#pragma once
// An artifact in a profile ({path|url|git, sha256, branch}) or a builtin patch ({builtin: <name>}),
// read with the field's path in every diagnostic.
#include <optional>
#include <string>
#include <string_view>

#include "core/profile.hpp"
#include "profile/yaml_reader.hpp"

namespace p2pnode::profile {

std::optional<Artifact> read_artifact_node(const YAML::Node& node, const std::string& path, Diagnostics& diag);
// {builtin: <name>}: a compat patch p2pnode ships (nvidia/breakages.yaml says where it is needed).
std::optional<Artifact> read_builtin_patch(const YAML::Node& node, const std::string& path, Diagnostics& diag);
// parent.key as an artifact: nullopt when absent; a key written with nothing after it is an error
// naming `what` (require() only sees that the key is there).
std::optional<Artifact> read_artifact(MapReader& parent, std::string_view key, const std::string& what);

}  // namespace p2pnode::profile
