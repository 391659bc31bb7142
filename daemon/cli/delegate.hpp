#pragma once
// `p2pnode serve` and `p2pnode status` live in a second executable, p2pnode-serve, so that the
// commands run by hand do not load the HTTP, Prometheus and systemd libraries.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace p2pnode::cli {

inline constexpr const char* kServeBinary = "p2pnode-serve";

// Reads only: where p2pnode-serve is for a p2pnode at `self`: beside it (a build tree, or
// /usr/local/bin), else <prefix>/libexec/p2pnode/. The candidates in the order tried.
std::vector<std::filesystem::path> serve_binary_candidates(const std::filesystem::path& self);

// Replaces this process with p2pnode-serve, same argv (the pid stays: systemd's Type=notify and
// the watchdog see the daemon as the unit's main process). Returns only when that failed: the
// exit status, after printing what was tried.
int exec_serve_binary(char** argv);

}  // namespace p2pnode::cli
