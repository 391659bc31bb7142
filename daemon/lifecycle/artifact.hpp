#pragma once
// Artifacts of the profile's driver section (the .run installer, the module source, patches):
// fetched or found, and always checked against their sha256 before anything uses them.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/profile.hpp"
#include "core/result.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

// Where downloads and git checkouts go (in-root).
inline constexpr std::string_view kArtifactDir = "/var/lib/p2pnode/artifacts";

// The largest file artifact, as curl's --max-filesize 8G bounds a download.
inline constexpr std::uint64_t kMaxArtifactBytes = 8ULL << 30;

// sha256 of a regular file (in-root path), streamed: opened without following a link or blocking,
// refused unless the descriptor is a regular file of at most kMaxArtifactBytes.
Result<std::string> sha256_file(const sys::SysRoot& root, std::string_view path);

// sha256 of a directory's listing, the same as
//   cd DIR && find . -type f ! -path './.git/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum
// for a tree without symbolic links (the top .git directory is left out), so an operator can compute
// it by hand. A link adds the line "<sha256 of its target's text>  ./path" in the same order
// (printf %s "$(readlink path)" | sha256sum). The tree is held to lifecycle/tree_rules.hpp first:
// a link that leads out of the tree once followed (absolute, climbing above it, or through other
// links), and any member that is not a file, a folder or a link, refuse it.
Result<std::string> sha256_tree(const sys::SysRoot& root, std::string_view dir);
// The listing itself ("<hex>  ./path" lines), for messages and tests.
Result<std::string> tree_listing(const sys::SysRoot& root, std::string_view dir);

struct Fetched {
  std::string path;  // in-root: a file, or a directory (a local tree or a git checkout)
  bool is_dir = false;
  std::string sha256;
  bool fetched = false;  // downloaded or cloned now (the machine changed)
};

using LogFn = std::function<void(std::string_view line)>;

// Finds or fetches an artifact and checks its sha256; a mismatch is an error and leaves the
// file where it was (a download is kept as <name>.part only while it can still be resumed).
// Downloads use curl through the runner: -C - resumes a partial file, --retry rides out drops.
Result<Fetched> fetch_artifact(const sys::SysRoot& root, sys::CommandRunner& runner, const Artifact& a,
                               std::string_view label, const LogFn& log);

// The file name an artifact will have ("NVIDIA-Linux-x86_64-550.90.07.run", "0001-fix.patch").
std::string artifact_basename(const Artifact& a);
// Where a git artifact is checked out (in-root): /var/lib/p2pnode/artifacts/git/<name>-<branch>,
// one component below git/ whatever the URL ends in.
std::string git_checkout_dir(const Artifact& a);

// Decoders of curl's stderr (pure). `--progress-bar` redraws "#####      34.1%" in place: the
// percentage of one redraw, or nullopt for any other line.
std::optional<double> curl_progress_percent(std::string_view line);
// The "curl: (22) The requested URL returned error: 404" lines among the redraws, joined by "; ".
std::string curl_error_lines(std::string_view err);

}  // namespace p2pnode::lifecycle
