#include "lifecycle/next_kernel.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <regex>
#include <sstream>

#include <sys/utsname.h>

#include "core/text.hpp"
#include "dkms/status.hpp"
#include "lifecycle/build_lock.hpp"
#include "lifecycle/dkms_run.hpp"
#include "nvidia/breakage.hpp"
#include "nvidia/sha256.hpp"

namespace p2pnode::lifecycle {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
std::string trim(std::string_view s) { return std::string(p2pnode::trim(s, " \t\r")); }

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string l; std::getline(in, l);) { out.push_back(l); }
  return out;
}
}  // namespace

std::map<std::string, AptPolicy> parse_apt_policy(std::string_view text) {
  std::map<std::string, AptPolicy> out;
  std::string pkg;
  for (const auto& l : lines_of(text)) {
    if (!l.empty() && l[0] != ' ' && l.back() == ':') {
      pkg = l.substr(0, l.size() - 1);
      out[pkg];
      continue;
    }
    const std::string t = trim(l);
    for (const char* key : {"Installed:", "Candidate:"}) {
      if (pkg.empty() || t.rfind(key, 0) != 0) { continue; }
      std::string v = trim(t.substr(std::string(key).size()));
      if (v == "(none)") { v.clear(); }
      (key[0] == 'I' ? out[pkg].installed : out[pkg].candidate) = v;
    }
  }
  return out;
}

std::vector<std::string> parse_apt_depends(std::string_view text) {
  std::vector<std::string> out;
  bool after_alternative = false;  // " |Depends: a" then "  Depends: b": a or b, take a
  for (const auto& l : lines_of(text)) {
    const std::string t = trim(l);
    const bool alt = t.rfind("|Depends:", 0) == 0;
    if (alt || t.rfind("Depends:", 0) == 0) {
      const std::string name = trim(t.substr(t.find(':') + 1));
      if (!after_alternative && !name.empty() && name[0] != '<') { out.push_back(name); }
      after_alternative = alt;
    } else {
      after_alternative = false;
    }
  }
  return out;
}

std::string release_of_image_package(std::string_view p) {
  static const std::regex re(R"(^linux-image-([0-9]+\.[0-9]+[^ ]*?)(-unsigned)?$)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(p.begin(), p.end(), m, re)) { return {}; }
  return m[1].str();
}

std::vector<DkmsPatch> parse_dkms_patches(std::string_view conf) {
  // p2pnode writes values in '…' (grammar::shell_quote); older p2pnode and others in "…".
  static const std::regex re(R"re(^\s*PATCH(_MATCH)?\[([0-9]+)\]\s*=\s*(?:'([^']*)'|"?([^"]*)"?)\s*$)re");
  std::map<int, DkmsPatch> by_index;
  for (const auto& l : lines_of(conf)) {
    std::smatch m;
    if (!std::regex_match(l, m, re)) { continue; }
    auto& p = by_index[std::stoi(m[2].str())];
    // dkms.conf is shell: a \\ in a double-quoted value is one backslash.
    std::string v = m[3].matched ? m[3].str() : m[4].str();
    if (!m[3].matched) {
      for (std::size_t i = 0; (i = v.find("\\\\", i)) != std::string::npos; ++i) { v.erase(i, 1); }
    }
    (m[1].matched ? p.match : p.file) = v;
  }
  std::vector<DkmsPatch> out;
  for (auto& [i, p] : by_index) {
    if (!p.file.empty()) { out.push_back(std::move(p)); }
  }
  return out;
}

Result<std::optional<NextKernel>> find_next_kernel(const sys::SysRoot& root, sys::CommandRunner& runner) {
  // Debian's, then Ubuntu's (the GA kernel and the HWE kernels of 22.04 and 24.04).
  static const std::vector<std::string> metas = {
      "linux-image-amd64",   "linux-image-cloud-amd64",       "linux-image-rt-amd64",
      "linux-image-generic", "linux-image-generic-hwe-22.04", "linux-image-generic-hwe-24.04"};
  sys::Command c;
  c.argv = {"apt-cache", "policy"};
  c.argv.insert(c.argv.end(), metas.begin(), metas.end());
  c.timeout = std::chrono::seconds(60);
  const auto r = runner.run(c);
  if (!r.success()) { return Error{"apt-cache policy " + r.describe() + ": " + trim(r.err)}; }
  const auto policy = parse_apt_policy(r.out);
  for (const auto& meta : metas) {
    const auto it = policy.find(meta);
    if (it == policy.end() || it->second.installed.empty() || it->second.candidate.empty()) { continue; }
    sys::Command d;
    d.argv = {"apt-cache", "depends", meta + "=" + it->second.candidate};
    d.timeout = std::chrono::seconds(60);
    const auto dr = runner.run(d);
    if (!dr.success()) { return Error{d.display() + " " + dr.describe()}; }
    for (const auto& dep : parse_apt_depends(dr.out)) {
      if (auto rel = release_of_image_package(dep); !rel.empty()) {
        return std::optional<NextKernel>(
            NextKernel{meta, it->second.candidate, rel, root.is_dir("/lib/modules/" + rel)});
      }
    }
    return Error{meta + "=" + it->second.candidate + " depends on no linux-image-<release> package"};
  }
  return std::optional<NextKernel>();
}

json to_json(const KernelVerdict& v) {
  return {{"release", v.release},
          {"package_version", v.package_version},
          {"module", v.module},
          {"keeps_p2p", v.keeps_p2p},
          {"summary", v.summary},
          {"breakages", v.breakages},
          {"fixes", v.fixes},
          {"patches_applied", v.patches_applied},
          {"first_error", v.first_error},
          {"make_log", v.make_log},
          {"build_seconds", v.build_seconds},
          {"core", v.core},
          {"staged_sha256", v.staged_sha256}};
}

Result<KernelVerdict> verdict_from_json(const json& j) {
  try {
    KernelVerdict v;
    v.release = j.at("release").get<std::string>();
    v.package_version = j.at("package_version").get<std::string>();
    v.module = j.at("module").get<std::string>();
    v.keeps_p2p = j.at("keeps_p2p").get<bool>();
    v.summary = j.at("summary").get<std::string>();
    v.breakages = j.value("breakages", std::vector<std::string>{});
    v.fixes = j.value("fixes", std::vector<std::string>{});
    v.patches_applied = j.value("patches_applied", std::vector<std::string>{});
    v.first_error = j.value("first_error", std::string());
    v.make_log = j.value("make_log", std::string());
    v.build_seconds = j.value("build_seconds", 0.0);
    v.core = j.value("core", std::string());
    v.staged_sha256 = j.value("staged_sha256", std::string());
    return v;
  } catch (const std::exception& e) { return Error{std::string("next-kernel record: ") + e.what()}; }
}

Result<std::pair<std::string, std::string>> fetch_kernel_headers(const sys::SysRoot& root, sys::CommandRunner& runner,
                                                                 const std::string& release, const std::string& version,
                                                                 const ProgressFn& log) {
  const std::string dir = sys::join(std::string(kKernelCacheDir), release);
  const std::string unpacked = sys::join(dir, "root"), build = sys::join(unpacked, "usr/src/linux-headers-" + release);
  auto source_of = [&]() -> std::string {
    // Debian's build dir includes the -common tree's Makefile by absolute path: that names the source.
    const auto mk = root.read_text(sys::join(build, "Makefile")).value_or("");
    static const std::regex inc(R"(include\s+\S*/usr/src/(linux-headers-[^/\s]+)/Makefile)");
    std::smatch m;
    return std::regex_search(mk, m, inc) ? sys::join(unpacked, "usr/src", m[1].str()) : build;
  };
  if (root.exists(sys::join(dir, "fetched"))) { return std::make_pair(build, source_of()); }
  Runner run(runner, log);
  const std::string pkg = "linux-headers-" + release;
  auto deps = run.quiet({"apt-cache", "depends", pkg + "=" + version}, std::chrono::seconds(60));
  if (!deps.success()) {
    return Error{"apt-cache depends " + pkg + "=" + version + " " + deps.describe() + ": " + trim(deps.err)};
  }
  std::vector<std::string> want = {pkg + "=" + version};
  for (const auto& d : parse_apt_depends(deps.out)) {
    if (d.rfind("linux-headers-", 0) == 0 || d.rfind("linux-kbuild-", 0) == 0) { want.push_back(d + "=" + version); }
  }
  (void)root.remove_tree(dir);
  if (auto st = root.make_dirs(sys::join(dir, "debs")); !st) { return st.error(); }
  // apt-get download writes into the working directory only: no install, no apt or dpkg state touched.
  sys::Command c;
  c.argv = {"apt-get", "download", "-q"};
  c.argv.insert(c.argv.end(), want.begin(), want.end());
  c.cwd = root.host_path(sys::join(dir, "debs")).string();
  c.timeout = std::chrono::minutes(15);
  log("downloading " + std::to_string(want.size()) + " headers package(s) into " + dir + "/debs");
  const auto dl = runner.run(c);
  if (!dl.success()) { return Error{c.display() + " " + dl.describe() + ": " + trim(dl.err)}; }
  const std::string tmp = unpacked + ".tmp";
  for (const auto& name : root.list_dir(sys::join(dir, "debs"))) {
    if (!name.ends_with(".deb")) { continue; }
    auto x = run.quiet(
        {"dpkg-deb", "-x", root.host_path(sys::join(dir, "debs", name)).string(), root.host_path(tmp).string()},
        std::chrono::minutes(5));
    if (!x.success()) { return Error{"dpkg-deb -x " + name + " " + x.describe() + ": " + trim(x.err)}; }
  }
  if (auto st = root.move(tmp, unpacked); !st) { return st.error().with_context("unpacking the headers"); }
  if (!root.exists(sys::join(build, "Makefile"))) {
    return Error{"the downloaded packages hold no " + build + "/Makefile (not a headers package of " + release + "?)"};
  }
  // Point the build dir's absolute include at the unpacked -common tree.
  auto mk = root.read_text(sys::join(build, "Makefile"));
  if (mk && mk->find("include /usr/src/") != std::string::npos) {
    std::string text = *mk;
    const std::string to = "include " + root.host_path(sys::join(unpacked, "usr/src")).string() + "/";
    text.replace(text.find("include /usr/src/"), std::string("include /usr/src/").size(), to);
    if (auto st = root.write_file_atomic(sys::join(build, "Makefile"), text + "\n"); !st) { return st.error(); }
  }
  if (auto st = root.write_file_atomic(sys::join(dir, "fetched"), version + "\n"); !st) { return st.error(); }
  return std::make_pair(build, source_of());
}

std::string staged_fingerprint(const sys::SysRoot& root, const DriverSpec& d) {
  const ModuleTarget t = module_target(d);
  std::string all = root.read_text(sys::join(t.src_dir, "dkms.conf")).value_or("");
  auto names = root.list_dir(sys::join(t.src_dir, "patches"));
  std::sort(names.begin(), names.end());
  const std::string sep(1, '\0');
  for (const auto& n : names) {
    all += sep + n + sep + root.read_text(sys::join(t.src_dir, "patches", n), 64 << 20).value_or("");
  }
  return nvidia::sha256_hex(all);
}

namespace {
// The staged patches whose PATCH_MATCH takes this kernel, applied to the scratch copy in dkms.conf's
// order (each one recorded in `applied`). Returns what did not apply, empty when every one did.
Result<std::string> apply_next_kernel_patches(const sys::SysRoot& root, sys::CommandRunner& runner,
                                              std::string_view conf, const std::string& release,
                                              const std::string& scratch, std::vector<std::string>& applied) {
  for (const auto& p : parse_dkms_patches(conf)) {
    if (!p.match.empty()) {
      try {
        if (!std::regex_search(release, std::regex(p.match, std::regex::extended))) { continue; }
      } catch (const std::regex_error&) {
        return Error{"dkms.conf: PATCH_MATCH for " + p.file + " is not a regex: " + p.match};
      }
    }
    sys::Command c;
    c.argv = {"patch", "-p1", "-s", "-i", root.host_path(sys::join(scratch, "patches", p.file)).string()};
    c.cwd = root.host_path(scratch).string();
    const auto r = runner.run(c);
    if (!r.success()) {
      return "the next kernel " + release + ": the staged patch " + p.file + " does not apply (" + r.describe() +
             "): " + trim(r.out + r.err);
    }
    applied.push_back(p.file);
  }
  return std::string();
}

// make's command line for the scratch tree against the headers ({build dir, source dir}, in-root):
// the modules linked with the staged tree's prebuilt core, or without one every kernel-layer object
// compiled. v.core says which.
std::vector<std::string> next_kernel_make_argv(const sys::SysRoot& root, const std::string& scratch,
                                               const std::pair<std::string, std::string>& headers,
                                               const JudgeOptions& opt, KernelVerdict& v) {
  const bool core = root.exists(sys::join(scratch, "kernel-open/nvidia/nv-kernel.o_binary"));
  const std::string src = root.host_path(headers.second).string(), out = root.host_path(headers.first).string();
  const std::string kopen = root.host_path(sys::join(scratch, "kernel-open")).string();
  std::string mods;
  for (const auto& m : opt.modules) { mods += (mods.empty() ? "" : " ") + m; }
  std::vector<std::string> argv = {"nice", "-n", std::to_string(opt.nice), "make"};
  if (core) {
    v.core = "the modules linked with the staged tree's core (kernel-open/*/*.o_binary)";
    argv.insert(argv.end(), {"-C", kopen, "modules", "SYSSRC=" + src, "SYSOUT=" + out, "-j" + opt.jobs});
    if (!mods.empty()) { argv.push_back("NV_KERNEL_MODULES=" + mods); }
    return argv;
  }
  // No prebuilt core to link (a tree DKMS builds whole): compile every kernel-layer object of the
  // modules through Kbuild, as NVIDIA's Makefile calls it, and say that nothing was linked.
  const std::vector<std::string> which = opt.modules.empty() ? std::vector<std::string>{"nvidia"} : opt.modules;
  if (mods.empty()) { mods = "nvidia"; }
  v.core = "objects of " + mods + " compiled, not linked (the staged tree carries no prebuilt core)";
  struct utsname u {};
  ::uname(&u);
  argv.insert(argv.end(), {"-C", src, "KBUILD_OUTPUT=" + out, "M=" + kopen, std::string("ARCH=") + u.machine,
                           "NV_KERNEL_SOURCES=" + src, "NV_KERNEL_OUTPUT=" + out, "NV_KERNEL_MODULES=" + mods,
                           "NV_SPECTRE_V2=0", "-j" + opt.jobs});
  for (const auto& m : which) {
    for (const auto& f : root.list_dir(sys::join(scratch, "kernel-open", m))) {
      if (f.size() > 2 && f.compare(f.size() - 2, 2, ".c") == 0) {
        argv.push_back(m + "/" + f.substr(0, f.size() - 2) + ".o");
      }
    }
  }
  return argv;
}

// A failed build's make.log read: the known breakages it matches (with their builtin fixes) and the
// first compiler error into v; returns what broke, in a few words.
std::string next_kernel_break_summary(KernelVerdict& v, const std::string& text, const sys::CommandResult& r,
                                      const std::string& driver_version) {
  for (const auto& m : nvidia::match_make_log(nvidia::builtin_breakages(), text, driver_version)) {
    v.breakages.push_back(m.breakage->id);
    if (m.breakage->fix_builtin) { v.fixes.push_back(*m.breakage->fix_builtin); }
  }
  v.first_error = dkms::first_compiler_error(text).value_or("");
  if (const auto e = v.first_error.find("error:"); e != std::string::npos) {
    const auto s = v.first_error.rfind('\n', e);
    v.first_error = v.first_error.substr(s == std::string::npos ? 0 : s + 1);
  }
  return !v.breakages.empty()
             ? "known breakage " + v.breakages.front() +
                   (v.fixes.empty() ? std::string() : " (fixed by the builtin patch " + v.fixes.front() + ")")
         : !v.first_error.empty() ? v.first_error
                                  : "make " + r.describe();
}
}  // namespace

Result<KernelVerdict> judge_kernel(const sys::SysRoot& root, sys::CommandRunner& runner, const DriverSpec& d,
                                   const std::string& release, const std::string& version, const JudgeOptions& opt,
                                   const ProgressFn& log) {
  const ModuleTarget t = module_target(d);
  KernelVerdict v;
  v.release = release;
  v.package_version = version;
  v.module = t.name + "/" + t.version;
  v.staged_sha256 = staged_fingerprint(root, d);
  const auto conf = root.read_text(sys::join(t.src_dir, "dkms.conf"));
  if (!conf) { return Error{t.src_dir + "/dkms.conf is missing: the module is not staged yet (run `p2pnode apply`)"}; }
  // One build of this package at a time: a running apply or kernel-hook build finishes first.
  auto lock = BuildLock::acquire(root, build_lock_path(t.dir_name()), [&](const std::string& holder) {
    log("waiting for the build lock (" + holder + ")");
  });
  if (!lock) { return lock.error(); }
  auto headers = fetch_kernel_headers(root, runner, release, version, log);
  if (!headers) {
    return Error{"fetching the headers of " + release + " (" + version + "): " + headers.error().message};
  }
  const std::string dir = sys::join(std::string(kKernelCacheDir), release);
  const std::string scratch = sys::join(dir, "build-" + t.dir_name());
  (void)root.remove_tree(scratch);
  if (auto st = root.copy_tree(t.src_dir, scratch); !st) {
    return Error{"copying " + t.src_dir + ": " + st.error().message};
  }
  v.make_log = sys::join(dir, "make-" + t.dir_name() + ".log");
  auto finish = [&](bool keeps, std::string summary) {
    v.keeps_p2p = keeps;
    v.summary = std::move(summary);
    (void)root.remove_tree(scratch);
    return v;
  };
  const auto refusal = apply_next_kernel_patches(root, runner, *conf, release, scratch, v.patches_applied);
  if (!refusal) { return refusal.error(); }
  if (!refusal->empty()) { return finish(false, *refusal); }
  sys::Command c;
  c.argv = next_kernel_make_argv(root, scratch, *headers, opt, v);
  log("building " + v.module + " for " + release + " at nice " + std::to_string(opt.nice));
  c.timeout = std::chrono::minutes(60);
  c.unset_env = {"MAKELEVEL", "MAKEFLAGS", "MFLAGS"};  // an outer make's state would confuse NVIDIA's Makefile
  const auto start = std::chrono::steady_clock::now();
  const auto r = runner.run(c);
  v.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string text = r.out + r.err;
  (void)root.write_file_atomic(v.make_log, text);
  if (r.success()) {
    return finish(true, "the next kernel " + release + " (" + version + ") keeps P2P: " + v.module +
                            " builds against its headers" +
                            (v.patches_applied.empty() ? "" : " with the staged patches"));
  }
  const std::string what = next_kernel_break_summary(v, text, r, t.version);
  return finish(false, "the next kernel " + release + " (" + version + ") breaks " + v.module + ": " + what);
}

}  // namespace p2pnode::lifecycle
