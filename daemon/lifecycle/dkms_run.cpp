#include "lifecycle/dkms_run.hpp"

#include <algorithm>
#include <cstdio>

#include "nvidia/breakage.hpp"

namespace p2pnode::lifecycle {
namespace fs = std::filesystem;
using json = nlohmann::json;
namespace {
constexpr std::size_t kLogTail = 20;

// A build p2pnode starts is not a sub-make of whatever started p2pnode (`make test`, a provisioning
// Makefile): with MAKELEVEL set, DKMS's `make -f - show-CC` prints "Entering directory" into CC and
// NVIDIA's kernel-open/Makefile fails with "Unterminated quoted string".
const std::vector<std::string> kOuterMake = {"MAKEFLAGS",    "MAKELEVEL",    "MFLAGS",      "MAKEOVERRIDES",
                                             "MAKE_TERMOUT", "MAKE_TERMERR", "GNUMAKEFLAGS"};
}  // namespace

std::string seconds(std::chrono::steady_clock::duration d) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", std::chrono::duration<double>(d).count());
  return b;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

sys::CommandResult Runner::run(const std::string& step, std::vector<std::string> argv, std::chrono::seconds timeout,
                               bool changes, const std::function<void(std::string_view)>& on_line) {
  sys::Command cmd;
  cmd.argv = std::move(argv);
  cmd.timeout = timeout;
  cmd.unset_env = kOuterMake;
  const auto start = std::chrono::steady_clock::now();
  cmd.on_line = [&](std::string_view line, bool) {
    if (on_line) {
      on_line(line);
    } else if (!line.empty()) {
      log_("[" + step + " +" + seconds(std::chrono::steady_clock::now() - start) + "] " + std::string(line));
    }
  };
  log_("[" + step + "] " + cmd.display());
  auto r = runner_.run(cmd);
  log_("[" + step + "] " + r.describe() + " after " + seconds(std::chrono::steady_clock::now() - start));
  if (changes) { ++changes_; }
  return r;
}

sys::CommandResult Runner::quiet(std::vector<std::string> argv, std::chrono::seconds timeout) {
  sys::Command cmd;
  cmd.argv = std::move(argv);
  cmd.timeout = timeout;
  cmd.unset_env = kOuterMake;
  return runner_.run(cmd);
}

std::unique_ptr<lifecycle::ProgressWatcher> watch_build(const sys::SysRoot& root, const std::string& build_log,
                                                        const std::string& step, const ProgressFn& log) {
  const fs::path host = root.host_path(build_log);
  return std::make_unique<lifecycle::ProgressWatcher>(
      [host] {
        lifecycle::ProgressWatcher::Sample s;
        std::error_code ec;
        const auto size = fs::file_size(host, ec);
        if (ec) { return s; }
        s.size = size;
        if (std::FILE* f = std::fopen(host.c_str(), "rb")) {
          const long from = size > 4096 ? static_cast<long>(size - 4096) : 0;
          std::fseek(f, from, SEEK_SET);
          char buf[4096];
          s.tail.assign(buf, std::fread(buf, 1, sizeof buf, f));
          std::fclose(f);
        }
        return s;
      },
      [step, &log](const std::string& line) { log("[" + step + "] " + line); }, host.filename().string());
}

// dkms status entries for one package.
Result<std::vector<dkms::StatusEntry>> status_of(Runner& run, const std::string& name, const std::string& version) {
  std::vector<std::string> argv = {"dkms", "status", "-m", name};
  if (!version.empty()) { argv.insert(argv.end(), {"-v", version}); }
  // DKMS 3.x reads every built module's files for its status; on a loaded box that is minutes.
  const auto r = run.run("dkms status", argv, kStatusTimeout, false);
  if (!r.success()) {
    std::string said = dkms::tail_lines(r.err, 1);  // DKMS's last word, "…\n"
    if (!said.empty()) { said.pop_back(); }
    return Error{"`dkms status -m " + name + (version.empty() ? "" : " -v " + version) + "` " + r.describe() +
                 (said.empty() ? "" : ": " + said)};
  }
  return dkms::parse_status(r.out);
}

bool installed_for(const std::vector<dkms::StatusEntry>& st, const std::string& version, const std::string& kernel) {
  for (const auto& e : st) {
    if (e.version == version && e.kernel == kernel && e.state == "installed") { return true; }
  }
  return false;
}

// A failed DKMS step: its exit code and meaning, DKMS's own error line, the compiler's first error
// and the tail of make.log.
std::string failure_report(const std::string& what, const sys::CommandResult& r, const sys::SysRoot& root,
                           const std::string& make_log, json& details, const std::string& driver_version) {
  std::string msg = what + ": dkms " + r.describe();
  if (r.exited) { msg += " (" + dkms::exit_code_meaning(r.exit_code) + ")"; }
  details["dkms_exit_code"] = r.exited ? r.exit_code : -1;
  if (auto line = dkms::dkms_failure_line(r.out + "\n" + r.err)) { msg += "; " + *line; }
  if (auto log = root.read_text(make_log, 16 << 20)) {
    details["make_log"] = make_log;
    details["make_log_tail"] = dkms::tail_lines(*log, kLogTail);
    if (auto err = dkms::first_compiler_error(*log)) {
      msg += "; first error: " + *err;
      details["first_error"] = *err;
    }
    msg += "; make.log: " + make_log;
    const auto known = nvidia::match_make_log(nvidia::builtin_breakages(), *log, driver_version);
    if (!known.empty()) {
      json ids = json::array();
      for (const auto& m : known) {
        msg += "; " + m.describe();
        ids.push_back(m.breakage->id);
      }
      details["breakages"] = ids;
    }
  } else {
    details["output_tail"] = dkms::tail_lines(r.out + r.err, kLogTail);
  }
  return msg;
}

std::vector<std::string> unpack_argv(const std::string& archive, const std::string& dir) {
  return {"tar", "--no-same-owner", "--no-same-permissions", "-xf", archive, "-C", dir};
}

std::vector<std::string> list_argv(const std::string& archive) {
  return {"tar", "--numeric-owner", "--quoting-style=escape", "-tvf", archive};
}

}  // namespace p2pnode::lifecycle
