#pragma once
// The limits a YAML text must keep before yaml-cpp turns it into a node graph: nesting depth,
// aliases (never to a node still open, which would be a cycle) and the nodes that aliases add when
// expanded. Checked on the parser's events, so a self-referencing alias or a doubling bomb is refused
// in one linear pass, before any code walks a graph that would recurse forever or explode.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace p2pnode::profile {

struct YamlLimits {
  std::size_t max_depth = 64;            // nested mappings and lists (a profile uses about 6)
  std::size_t max_alias_nodes = 10'000;  // nodes added by expanding every alias, in all
};

struct YamlLimitBreach {
  int line = 0;  // 1-based
  int column = 0;
  std::string message;  // what was found and what is allowed
};

// The first limit the first document of `text` breaks, or nullopt. A syntax error is not a breach
// (the loader reports it with yaml-cpp's own message).
std::optional<YamlLimitBreach> find_yaml_limit_breach(std::string_view text, const YamlLimits& limits = {});

}  // namespace p2pnode::profile
