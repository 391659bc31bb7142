#include "lifecycle/artifact.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/grammar.hpp"
#include "lifecycle/dkms_run.hpp"
#include "lifecycle/tree_rules.hpp"
#include "nvidia/sha256.hpp"

namespace p2pnode::lifecycle {
namespace fs = std::filesystem;
namespace {

Error mismatch(std::string_view label, std::string_view where, const std::string& want, const std::string& got) {
  return Error{std::string(label) + ": sha256 mismatch: the profile says " + want + ", " + std::string(where) +
               " has " + got + " (refusing to use it; nothing was changed)"};
}

// One path component of [A-Za-z0-9._-], never "." or ".." or hidden: a git URL ending in "/.."
// must not name the artifacts folder itself (which a stale checkout's removal would then delete).
std::string safe_name(std::string s) {
  for (char& c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) { c = '_'; }
  }
  if (!s.empty() && s.front() == '.') { s.front() = '_'; }
  return s.empty() ? "artifact" : s;
}

// A file's digest, read through SysRoot::read_stream: never blocked by a FIFO swapped in after a
// check, at most kMaxArtifactBytes.
Result<std::string> hash_file(const sys::SysRoot& root, std::string_view path) {
  nvidia::Sha256 h;
  if (auto st = root.read_stream(path, kMaxArtifactBytes, "a file artifact",
                                 [&](std::span<const char> c) { h.update(c.data(), c.size()); });
      !st) {
    return st.error();
  }
  return h.hex();
}

// What a path: artifact names, judged by lstat before anything opens it (opening a device can act:
// a watchdog starts counting): a regular file of at most 8 GiB or a directory. A link is followed
// inside the root and what it leads to judged the same way. The in-root path to read, and whether
// it is a directory.
Result<std::pair<std::string, bool>> local_artifact(const sys::SysRoot& root, const std::string& path,
                                                    std::string_view label) {
  const std::string where = std::string(label) + ": " + path;
  auto info = root.lstat(path);
  if (!info) { return info.error().with_context(std::string(label)); }
  if (info->type == sys::FileType::missing) { return Error{where + " does not exist"}; }
  std::string real = path;
  std::string shown = path;
  if (info->type == sys::FileType::symlink) {
    auto r = root.resolve(path);
    if (!r) { return Error{where + ": " + r.error().message}; }
    real = *r;
    shown = path + " (a link to " + real + ")";
    info = root.lstat(real);
    if (!info) { return info.error().with_context(std::string(label)); }
  }
  if (info->type == sys::FileType::directory) { return std::pair{real, true}; }
  if (info->type != sys::FileType::regular) {
    return Error{std::string(label) + ": " + shown + " is " + std::string(sys::describe(info->type)) +
                 ": a path: artifact must be a regular file or a directory"};
  }
  if (info->size > kMaxArtifactBytes) {
    return Error{std::string(label) + ": " + shown + " is " + std::to_string(info->size) +
                 " bytes; a file artifact is at most 8 GiB (as curl's --max-filesize for a download)"};
  }
  return std::pair{real, false};
}

// A local artifact is copied into p2pnode's own directory (root's, 0700 above it) and hashed there:
// what is used later is the copy, so swapping the original after the check changes nothing.
Result<Fetched> check_path(const sys::SysRoot& root, const std::string& named, const Artifact& a,
                           std::string_view label) {
  const auto local = local_artifact(root, named, label);
  if (!local) { return local.error(); }
  const std::string& path = local->first;
  Fetched f;
  f.is_dir = local->second;
  // The original first: a wrong one is refused before anything is written.
  if (auto h = f.is_dir ? sha256_tree(root, path) : sha256_file(root, path); !h || *h != a.sha256) {
    return !h ? h.error().with_context(std::string(label)) : mismatch(label, path, a.sha256, *h);
  }
  // Named by digest too: two artifacts of one name (a source and a patch both called src) never share a copy.
  const std::string dest =
      sys::join(kArtifactDir, "local", a.sha256.substr(0, 16) + "-" + safe_name(artifact_basename(a)));
  const std::string part = dest + ".part";
  if (auto st = root.make_dirs(sys::join(kArtifactDir, "local")); !st) {
    return st.error().with_context(std::string(label));
  }
  (void)root.remove_tree(part);
  if (auto st = f.is_dir ? root.copy_tree(path, part) : root.copy_file(path, part); !st) {
    return st.error().with_context(std::string(label));
  }
  auto h = f.is_dir ? sha256_tree(root, part) : sha256_file(root, part);
  if (!h || *h != a.sha256) { (void)root.remove_tree(part); }
  if (!h) { return h.error().with_context(std::string(label)); }
  if (*h != a.sha256) { return mismatch(label, path, a.sha256, *h); }
  (void)root.remove_tree(dest);
  if (auto st = root.move(part, dest); !st) { return st.error().with_context(std::string(label)); }
  f.path = dest;
  f.sha256 = *h;
  return f;
}

Result<Fetched> download(const sys::SysRoot& root, sys::CommandRunner& runner, const Artifact& a,
                         std::string_view label, const LogFn& log) {
  const std::string dest = sys::join(kArtifactDir, artifact_basename(a));
  if (root.exists(dest)) {
    if (auto h = sha256_file(root, dest); h && *h == a.sha256) { return Fetched{dest, false, *h, false}; }
  }
  if (auto st = root.make_dirs(kArtifactDir); !st) { return st.error().with_context(std::string(label)); }
  const std::string part = dest + ".part";
  const auto part_info = root.lstat(part);
  const std::uint64_t have = part_info && part_info->type == sys::FileType::regular ? part_info->size : 0;
  const std::string shown = grammar::redact_url(*a.url);
  log("downloading " + shown + " to " + dest + (have ? " (resuming at " + std::to_string(have) + " bytes)" : ""));
  sys::Command cmd;
  cmd.argv = {"curl", "--fail", "--location", "--progress-bar", "--show-error", "--retry", "3", "--continue-at", "-",
              "--output", root.host_path(part).string(), "--write-out",
              "downloaded %{size_download} bytes in %{time_total} s (%{speed_download} B/s)\n",
              // http and https only, redirects included (never file://, which would read the root's files).
              "--proto", "=http,https", "--proto-redir", "=http,https", "--max-filesize", "8G", "--", *a.url};
  cmd.timeout = std::chrono::hours(1);
  cmd.cr_ends_line = true;  // the bar redraws with \r: one progress line every 5 s, and at 100 %
  auto last_progress = std::chrono::steady_clock::now();
  double last_pct = -1;
  cmd.on_line = [&](std::string_view line, bool) {
    if (auto pct = curl_progress_percent(line)) {
      const auto now = std::chrono::steady_clock::now();
      const bool done = *pct >= 100.0 && last_pct < 100.0;
      if (done || (now - last_progress >= std::chrono::seconds(5) && *pct != last_pct)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f %%", *pct);
        log(artifact_basename(a) + ": " + buf + (have ? " (resumed)" : ""));
        last_progress = now;
        last_pct = *pct;
      }
    } else if (!line.empty()) {
      log(line);
    }
  };
  const auto r = runner.run(cmd);
  if (!r.success() && (r.exit_code == 33 || r.exit_code == 36)) {
    // The server cannot resume (no ranges, or the file changed): a kept .part would fail every
    // later apply the same way, so it goes and the next apply starts over.
    (void)root.remove_file(part);
    return Error{std::string(label) + ": downloading " + shown + ": curl " + r.describe() + ": " +
                     grammar::redact_userinfo(curl_error_lines(r.err)) + " (the server cannot resume " + part +
                     ": removed, the next apply downloads it whole)",
                 r.exit_code};
  }
  if (!r.success()) {
    const std::string why = grammar::redact_userinfo(curl_error_lines(r.err));
    return Error{std::string(label) + ": downloading " + shown + ": curl " + r.describe() +
                     (why.empty() ? "" : ": " + why) + " (the partial file " + part + " is kept for a resume)",
                 r.exit_code};
  }
  auto h = sha256_file(root, part);
  if (!h) { return h.error().with_context(std::string(label)); }
  if (*h != a.sha256) {
    // A complete download with the wrong digest cannot be fixed by resuming it.
    (void)root.remove_file(part);
    return mismatch(label, shown, a.sha256, *h);
  }
  if (auto st = root.move(part, dest); !st) { return st.error().with_context(std::string(label)); }
  return Fetched{dest, false, *h, true};
}

}  // namespace

std::string git_checkout_dir(const Artifact& a) {
  const std::string branch = a.branch.value_or("");
  return sys::join(kArtifactDir, "git", safe_name(artifact_basename(a) + (branch.empty() ? "" : "-" + branch)));
}

namespace {

Result<Fetched> clone(const sys::SysRoot& root, sys::CommandRunner& runner, const Artifact& a, std::string_view label,
                      const LogFn& log) {
  const std::string branch = a.branch.value_or("");
  const std::string dest = git_checkout_dir(a);
  if (root.is_dir(dest)) {
    if (auto h = sha256_tree(root, dest); h && *h == a.sha256) { return Fetched{dest, true, *h, false}; }
    (void)root.remove_tree(dest);  // ours, and not what the profile wants: start over
  }
  if (auto st = root.make_dirs(sys::join(kArtifactDir, "git")); !st) {
    return st.error().with_context(std::string(label));
  }
  // A password or token in the URL never reaches a message or the log (GET /v1/plan has no token),
  // nor does git's own echo of the URL.
  const std::string shown = grammar::redact_url(*a.git);
  log("cloning " + shown + (branch.empty() ? "" : " branch " + branch) + " into " + dest);
  sys::Command cmd;
  // ext:: runs a program and fd:: reads a descriptor: never, whatever git's defaults (the loader
  // refuses any <transport>:: form too).
  cmd.argv = {"git", "-c", "protocol.ext.allow=never", "-c", "protocol.fd.allow=never", "clone", "--depth", "1"};
  if (!branch.empty()) { cmd.argv.insert(cmd.argv.end(), {"--branch", branch}); }
  // After --: a repository that starts with '-' is never read as an option (the loader refuses one too).
  cmd.argv.insert(cmd.argv.end(), {"--", *a.git, root.host_path(dest).string()});
  cmd.timeout = std::chrono::hours(1);
  cmd.on_line = [&](std::string_view line, bool) { log(grammar::redact_userinfo(line)); };
  const auto r = runner.run(cmd);
  if (!r.success()) {
    return Error{std::string(label) + ": git clone " + shown + ": " + r.describe() +
                     (r.err.empty() ? "" : ": " + grammar::redact_userinfo(r.err)),
                 r.exit_code};
  }
  auto h = sha256_tree(root, dest);
  if (!h) { return h.error().with_context(std::string(label)); }
  if (*h != a.sha256) { return mismatch(label, dest + " (git " + branch + ")", a.sha256, *h); }
  return Fetched{dest, true, *h, true};
}

}  // namespace

std::string artifact_basename(const Artifact& a) {
  std::string s = a.path ? *a.path : a.url ? *a.url : a.git ? *a.git : std::string();
  // A URL's user info never names a file or a folder (https://user:token@host has no path).
  if (!a.path) { s = grammar::redact_url(s); }
  if (const auto q = s.find_first_of("?#"); q != std::string::npos && !a.path) { s.resize(q); }
  while (!s.empty() && s.back() == '/') { s.pop_back(); }
  const auto slash = s.rfind('/');
  std::string base = slash == std::string::npos ? s : s.substr(slash + 1);
  if (a.git && base.size() > 4 && base.compare(base.size() - 4, 4, ".git") == 0) { base.resize(base.size() - 4); }
  return base;
}

Result<std::string> sha256_file(const sys::SysRoot& root, std::string_view path) { return hash_file(root, path); }

Result<std::string> tree_listing(const sys::SysRoot& root, std::string_view dir) {
  auto members = walk_tree(root, dir);
  if (!members) { return Error{std::string(dir) + ": " + members.error().message + ": refusing the tree"}; }
  std::vector<std::string> lines;
  for (const auto& m : *members) {
    if (m.kind == TreeMember::Kind::directory) { continue; }
    if (m.kind == TreeMember::Kind::link) {
      lines.push_back(nvidia::sha256_hex(m.target) + "  " + m.path + "\n");
      continue;
    }
    auto h = hash_file(root, sys::join(dir, m.path.substr(2)));
    if (!h) { return h.error(); }
    lines.push_back(*h + "  " + m.path + "\n");
  }
  std::sort(lines.begin(), lines.end(), [](const std::string& x, const std::string& y) {
    return x.substr(66) < y.substr(66);  // by path, bytewise, as LC_ALL=C sort -z of the names
  });
  std::string listing;
  for (const auto& l : lines) { listing += l; }
  return listing;
}

Result<std::string> sha256_tree(const sys::SysRoot& root, std::string_view dir) {
  auto l = tree_listing(root, dir);
  if (!l) { return l.error(); }
  return nvidia::sha256_hex(*l);
}

Result<Fetched> fetch_artifact(const sys::SysRoot& root, sys::CommandRunner& runner, const Artifact& a,
                               std::string_view label, const LogFn& log) {
  if (a.sha256.empty()) { return Error{std::string(label) + ": the profile gives no sha256"}; }
  if (a.path) { return check_path(root, *a.path, a, label); }
  if (a.url) { return download(root, runner, a, label, log); }
  if (a.git) { return clone(root, runner, a, label, log); }
  return Error{std::string(label) + ": the profile names no path, url or git"};
}

std::optional<double> curl_progress_percent(std::string_view line) {
  while (!line.empty() && line.back() == ' ') { line.remove_suffix(1); }
  if (line.size() < 2 || line.back() != '%') { return std::nullopt; }
  line.remove_suffix(1);
  const auto sp = line.find_last_of(' ');
  const std::string_view num = sp == std::string_view::npos ? line : line.substr(sp + 1);
  const std::string_view bar = sp == std::string_view::npos ? std::string_view() : line.substr(0, sp);
  if (bar.find_first_not_of("#=-O ") != std::string_view::npos) {
    return std::nullopt;  // not a bar
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc() || end != num.data() + num.size() || v < 0 || v > 100) { return std::nullopt; }
  return v;
}

std::string curl_error_lines(std::string_view err) {
  std::string out;
  std::size_t start = 0;
  while (start <= err.size()) {
    const auto end = err.find_first_of("\r\n", start);
    const auto line = err.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (line.rfind("curl:", 0) == 0) { out += (out.empty() ? "" : "; ") + std::string(line); }
    if (end == std::string_view::npos) { break; }
    start = end + 1;
  }
  return out;
}

}  // namespace p2pnode::lifecycle
