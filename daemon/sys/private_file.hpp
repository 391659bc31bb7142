#pragma once
// Secrets the daemon reads (the API token, the TLS private key) must be readable by their owner
// only; one check, one wording, for all of them.
#include <filesystem>
#include <string_view>

#include "core/result.hpp"

namespace p2pnode::sys {

// Only reads: an error when `host_path` is missing, not a regular file, or has any group/other
// permission bit ("<what> /etc/p2pnode/token is readable by group or others (mode 644); …").
Status check_owner_only(const std::filesystem::path& host_path, std::string_view what);

}  // namespace p2pnode::sys
