#pragma once
// Secrets the daemon reads (the API token, the TLS private key, the DKMS signing key) must be
// owned by root (or the reading user) and readable by their owner only; one check, one wording,
// for all of them. The check is made on the open descriptor (open with O_NOFOLLOW, then fstat),
// so the file checked is the file read: no link, and no swap between a stat and an open.
#include <filesystem>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace p2pnode::sys {

// Only reads: an error when `host_path` is missing, a symbolic link, not a regular file, owned by
// someone other than root or this process's user, or has any group/other permission bit
// ("<what> /etc/p2pnode/token is readable by group or others (mode 644); …").
Status check_owner_only(const std::filesystem::path& host_path, std::string_view what);

// The same checks, then the content read from that same descriptor (at most max_bytes).
Result<std::string> read_private_file(const std::filesystem::path& host_path, std::string_view what,
                                      std::size_t max_bytes = 1 << 20);

}  // namespace p2pnode::sys
