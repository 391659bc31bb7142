#pragma once
// The one way p2pnode writes JSON as text: nlohmann's dump, with every invalid UTF-8 sequence
// replaced by U+FFFD instead of throwing. A hostname, a model name or a kernel-log line read from the
// machine may hold any bytes; a state file, an API answer or a message must never take the process
// down for them (nlohmann's default throws type_error 316).
#include <nlohmann/json.hpp>

#include <string>

namespace p2pnode {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace p2pnode
