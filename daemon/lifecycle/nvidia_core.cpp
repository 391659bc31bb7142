#include "lifecycle/nvidia_core.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include <unistd.h>

#include "core/json_text.hpp"
#include "dkms/status.hpp"
#include "lifecycle/artifact.hpp"
#include "nvidia/sha256.hpp"

namespace p2pnode::lifecycle {
namespace fs = std::filesystem;
using json = nlohmann::json;
namespace {

constexpr std::string_view kCoreFormat = "p2pnode-nvidia-core-v1";

// The first line of a tool's --version, or an error naming the tool.
Result<std::string> first_line(Runner& run, const std::vector<std::string>& argv) {
  const auto r = run.quiet(argv, std::chrono::seconds(30));
  if (!r.success()) {
    return Error{argv[0] + " " + r.describe() +
                 (r.start_failed ? " (not installed? the NVIDIA tree needs build-essential)" : "")};
  }
  return r.out.substr(0, r.out.find('\n'));
}

Result<nvidia::CoreInputs> inputs(const sys::SysRoot& root, Runner& run, const Staged& s,
                                  const std::string& source_sha256) {
  nvidia::CoreInputs in;
  in.source_sha256 = source_sha256;
  for (auto i : s.core.apply) {
    auto sha = sha256_file(root, s.patches[i]);
    if (!sha) { return sha.error(); }
    in.patch_sha256.push_back(*sha);
  }
  // NVIDIA's utils.mk compiles with $(CC) and $(CXX), gcc and g++ when unset (src/nvidia-modeset has
  // C++ sources: without g++ its make fails with "Error 127" minutes in): the key says which.
  const char* cc = std::getenv("CC");
  const char* cxx = std::getenv("CXX");
  auto gcc = first_line(run, {"gcc", "--version"});
  auto gxx = first_line(run, {cxx && *cxx ? std::string(cxx) : std::string("g++"), "--version"});
  auto ld = first_line(run, {"ld", "--version"});
  auto arch = first_line(run, {"uname", "-m"});
  for (const auto* r : {&gcc, &gxx, &ld, &arch}) {
    if (!*r) { return r->error(); }
  }
  in.compiler = (cc && *cc ? "CC=" + std::string(cc) + "; " : "") + *gcc +
                (cxx && *cxx ? "; CXX=" + std::string(cxx) : "") + "; " + *gxx;
  in.linker = *ld;
  in.arch = *arch;
  return in;
}

// The cached core of `dir` when core.json is there and every object still hashes as recorded.
std::optional<json> cached(const sys::SysRoot& root, const std::string& dir, const std::string& key) {
  auto text = root.read_text(sys::join(dir, "core.json"));
  if (!text) { return std::nullopt; }
  try {
    json j = json::parse(*text);
    if (j.at("format") != kCoreFormat || j.at("key") != key) { return std::nullopt; }
    for (const auto& o : nvidia::kCoreObjects) {
      auto sha = sha256_file(root, sys::join(dir, std::string(o.object)));
      if (!sha || *sha != j.at("objects").at(std::string(o.object)).get<std::string>()) { return std::nullopt; }
    }
    return j;
  } catch (const std::exception&) { return std::nullopt; }
}

Status place(const sys::SysRoot& root, const std::string& cache, const Staged& s) {
  for (const auto& o : nvidia::kCoreObjects) {
    // copy_file replaces a symlink left by an earlier `make modules` in the tree.
    if (auto st = root.copy_file(sys::join(cache, std::string(o.object)), sys::join(s.dir, std::string(o.binary)));
        !st) {
      return st.error().with_context("placing " + std::string(o.binary));
    }
  }
  return {};
}

// Keeps the newest kCoreCacheKeep cores (and `keep`), by the time each was last used. A ".<key>.<pid>.tmp"
// directory is another build's work in progress: left alone unless a day old (a build that died).
void prune(const sys::SysRoot& root, const std::string& keep) {
  std::vector<std::pair<fs::file_time_type, std::string>> dirs;
  const auto day_ago = fs::file_time_type::clock::now() - std::chrono::hours(24);
  for (const auto& name : root.list_dir(kCoreCacheDir)) {
    const std::string path = sys::join(std::string(kCoreCacheDir), name);
    auto info = root.lstat(path);
    if (!info || info->type != sys::FileType::directory || name == keep) { continue; }
    if (name.front() == '.') {
      if (info->modified < day_ago) { (void)root.remove_tree(path); }
      continue;
    }
    dirs.emplace_back(info->modified, path);
  }
  std::sort(dirs.begin(), dirs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = kCoreCacheKeep > 0 ? kCoreCacheKeep - 1 : 0; i < dirs.size(); ++i) {
    (void)root.remove_tree(dirs[i].second);
  }
}

// The one object NVIDIA's Makefile wrote under <dir>/_out/<os>_<arch>/.
Result<std::string> built_object(const sys::SysRoot& root, const std::string& dir, std::string_view object) {
  std::vector<std::string> found;
  const std::string out = sys::join(dir, "_out");
  for (const auto& name : root.list_dir(out)) {
    const std::string path = sys::join(out, name, std::string(object));
    if (auto info = root.lstat(path); info && info->type == sys::FileType::regular) { found.push_back(path); }
  }
  if (found.size() != 1) {
    return Error{"expected one " + std::string(object) + " under " + out + ", found " + std::to_string(found.size())};
  }
  return found.front();
}

}  // namespace

namespace {
// The scratch copy of the staged tree and core-build/ once it is empty.
void drop_core_scratch(const sys::SysRoot& root, const std::string& dir) {
  (void)root.remove_tree(dir);
  (void)root.remove_empty_dir(dir.substr(0, dir.rfind('/')));  // another build's scratch may be there
}

// The staged tree copied to `scratch` with the patches that touch the core applied: the staged tree
// stays as DKMS will take it. On failure the copy is gone.
Status core_scratch_copy(const sys::SysRoot& root, Runner& run, const Staged& s, const std::string& scratch) {
  drop_core_scratch(root, scratch);
  if (auto st = root.copy_tree(s.dir, scratch); !st) {
    drop_core_scratch(root, scratch);
    return st.error();
  }
  for (auto i : s.core.apply) {
    const std::string name = s.patches[i].substr(s.patches[i].rfind('/') + 1);
    auto r = run.run("core patch " + name,
                     {"patch", "-p1", "--batch", "--forward", "-d", root.host_path(scratch).string(), "-i",
                      root.host_path(s.patches[i]).string()},
                     std::chrono::minutes(5), false);
    if (!r.success()) {
      drop_core_scratch(root, scratch);
      return Error{"patch " + name + " does not apply to the core: patch " + r.describe() + ": " +
                   dkms::tail_lines(r.out + r.err, 5)};
    }
  }
  return {};
}

// Each core object built in the scratch copy and copied into `tmp`: their sha256 by name. On failure
// the scratch copy and `tmp` are gone and the error names the first compiler error and the log.
Result<json> build_core_objects(const sys::SysRoot& root, Runner& run, const std::string& scratch,
                                const std::string& tmp, const std::string& log_path) {
  (void)root.make_dirs(log_path.substr(0, log_path.rfind('/')));
  auto opened = root.open_log(log_path);
  if (!opened) {
    drop_core_scratch(root, scratch);
    (void)root.remove_tree(tmp);
    return opened.error().with_context("building the core");
  }
  std::ofstream log_file = std::move(opened).value();
  const auto jobs = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  json objects = json::object();
  for (const auto& o : nvidia::kCoreObjects) {
    const std::string step = "core build " + std::string(o.dir);
    auto progress = watch_build(root, log_path, step, run.log());
    auto r =
        run.run(step, {"make", "-C", root.host_path(sys::join(scratch, std::string(o.dir))).string(), "-j" + jobs},
                std::chrono::hours(2), true, [&](std::string_view line) { log_file << line << '\n'
                                                                                   << std::flush; });
    progress.reset();
    auto obj = r.success() ? built_object(root, sys::join(scratch, std::string(o.dir)), o.object)
                           : Result<std::string>(Error{"make " + r.describe()});
    Status copied = obj ? root.copy_file(*obj, sys::join(tmp, std::string(o.object))) : Status(obj.error());
    if (!copied) {
      drop_core_scratch(root, scratch);
      (void)root.remove_tree(tmp);
      std::string msg =
          "building " + std::string(o.object) + " (" + std::string(o.dir) + "): " + copied.error().message;
      log_file.close();
      if (auto text = root.read_text(log_path, 16 << 20)) {
        if (auto err = dkms::first_compiler_error(*text)) { msg += "; first error: " + *err; }
      }
      return Error{msg + "; build log: " + log_path};
    }
    auto sha = sha256_file(root, sys::join(tmp, std::string(o.object)));
    objects[std::string(o.object)] = sha ? *sha : "";
  }
  return objects;
}

// `tmp` (the objects) with its core.json becomes the cache entry `cache`; another build that kept
// the same core first wins.
Status keep_core(const sys::SysRoot& root, const std::string& tmp, const std::string& cache, const std::string& key,
                 const json& info) {
  if (auto st = root.write_file_atomic(sys::join(tmp, "core.json"), json_text(info, 2) + "\n"); !st) {
    return st.error();
  }
  if (!cached(root, cache, key)) {
    (void)root.remove_tree(cache);  // a damaged one
  }
  Status moved = root.move(tmp, cache);
  if (!moved && cached(root, cache, key)) {  // the other build kept the same core first: use that one
    (void)root.remove_tree(tmp);
    return {};
  }
  if (!moved) { return moved.error().with_context("keeping the core"); }
  return {};
}
}  // namespace

Result<CoreProvided> provide_core(const sys::SysRoot& root, Runner& run, const Staged& s,
                                  const std::string& source_sha256, const std::string& log_path) {
  auto in = inputs(root, run, s, source_sha256);
  if (!in) { return Error{"the core's inputs: " + in.error().message}; }
  CoreProvided out;
  out.key = nvidia::core_key(*in);
  const std::string cache = sys::join(std::string(kCoreCacheDir), out.key);
  if (auto j = cached(root, cache, out.key)) {
    if (auto st = place(root, cache, s); !st) { return st.error(); }
    (void)root.touch(cache);
    out.from_cache = true;
    out.message = "reused from " + cache + " (built " + j->value("built_at", std::string("?")) + " in " +
                  j->value("built_s", std::string("?")) + "): each kernel's build compiles kernel-open/ only";
    return out;
  }

  const std::string scratch = std::string(kStateDir) + "/core-build/" + s.dir.substr(s.dir.rfind('/') + 1);
  if (auto st = core_scratch_copy(root, run, s, scratch); !st) { return st.error(); }
  const auto start = std::chrono::steady_clock::now();
  (void)root.make_dirs(kCoreCacheDir);
  // Another package with the same source may be building the same core: each its own tmp directory.
  const std::string tmp =
      sys::join(std::string(kCoreCacheDir), "." + out.key + "." + std::to_string(::getpid()) + ".tmp");
  (void)root.remove_tree(tmp);
  (void)root.make_dirs(tmp);
  auto objects = build_core_objects(root, run, scratch, tmp, log_path);
  if (!objects) { return objects.error(); }
  drop_core_scratch(root, scratch);
  const std::string took = seconds(std::chrono::steady_clock::now() - start);
  char when[32] = "?";
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const json info = {{"format", kCoreFormat},
                     {"key", out.key},
                     {"source_sha256", in->source_sha256},
                     {"patch_sha256", in->patch_sha256},
                     {"compiler", in->compiler},
                     {"linker", in->linker},
                     {"arch", in->arch},
                     {"objects", *objects},
                     {"built_s", took},
                     {"built_at", when}};
  if (auto st = keep_core(root, tmp, cache, out.key, info); !st) { return st.error(); }
  prune(root, out.key);
  if (auto st = place(root, cache, s); !st) { return st.error(); }
  out.message = "built in " + took + " (" + in->compiler + "), kept in " + cache +
                ": each kernel's build compiles kernel-open/ only";
  return out;
}

}  // namespace p2pnode::lifecycle
