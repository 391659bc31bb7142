#pragma once
// The steps module_install.cpp and nvidia_core.cpp share: one command with its output streamed as
// progress, a progress line every 30 s from a growing build log, DKMS's status, a failed build's
// report (exit meaning, first compiler error, known breakage), a tree copy.
#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "dkms/status.hpp"
#include "lifecycle/build_progress.hpp"
#include "lifecycle/module_target.hpp"
#include "lifecycle/progress.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

std::string seconds(std::chrono::steady_clock::duration d);  // "3.2 s"
bool contains(const std::vector<std::string>& v, const std::string& s);

// One DKMS (or helper) invocation with its output streamed as "[dkms build 6.1.0-56-amd64 +3.2 s] …"
// (or, with quiet_output, handed to on_line only: a compiler's thousands of lines go to a log).
class Runner {
 public:
  Runner(sys::CommandRunner& r, const ProgressFn& log) : runner_(r), log_(log) {}
  sys::CommandResult run(const std::string& step, std::vector<std::string> argv, std::chrono::seconds timeout,
                         bool changes, const std::function<void(std::string_view)>& on_line = {});
  // A query whose output is the answer (`gcc --version`): nothing logged.
  sys::CommandResult quiet(std::vector<std::string> argv, std::chrono::seconds timeout);
  std::uint64_t changes() const { return changes_; }
  const ProgressFn& log() const { return log_; }

 private:
  sys::CommandRunner& runner_;
  const ProgressFn& log_;
  std::uint64_t changes_ = 0;
};

// A progress line at least every 30 s while a build writes `build_log` (in-root): its size and the
// file it is at.
std::unique_ptr<lifecycle::ProgressWatcher> watch_build(const sys::SysRoot& root, const std::string& build_log,
                                                        const std::string& step, const ProgressFn& log);

// dkms status entries for one package. An error when DKMS did not answer (its exit status, or no
// answer within kStatusTimeout): an empty list would read as "installed nowhere" and start every build again.
inline constexpr std::chrono::minutes kStatusTimeout{5};
Result<std::vector<dkms::StatusEntry>> status_of(Runner& run, const std::string& name, const std::string& version = {});
bool installed_for(const std::vector<dkms::StatusEntry>& st, const std::string& version, const std::string& kernel);

// A failed DKMS step: its exit code and meaning, DKMS's own error line, the compiler's first error
// and the tail of make.log, and the known breakage it matches.
std::string failure_report(const std::string& what, const sys::CommandResult& r, const sys::SysRoot& root,
                           const std::string& make_log, nlohmann::json& details,
                           const std::string& driver_version = {});

// tar's argv to unpack `archive` into `dir` as root without the archive's owners or modes
// (--no-same-owner --no-same-permissions: the umask applies, no set-id bits).
std::vector<std::string> unpack_argv(const std::string& archive, const std::string& dir);
// tar's argv to list `archive` with each member's type (`tar -tvf`), names escaped one a line: read
// by tree_rules.hpp's special_archive_member before anything is unpacked.
std::vector<std::string> list_argv(const std::string& archive);

}  // namespace p2pnode::lifecycle
