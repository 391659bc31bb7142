#pragma once
// CommandRunner: every external program p2pnode runs (dkms, modprobe, the agent, update-grub)
// goes through one of these: an argv (never a shell), a time limit, captured output, an exit
// status. Tests substitute a ScriptedRunner that records what would have run.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode::sys {

struct Command {
  std::vector<std::string> argv;
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  std::map<std::string, std::string> env;  // added to the inherited environment
  std::vector<std::string> unset_env;      // names taken out of the inherited environment
  std::optional<std::string> cwd;
  std::size_t max_output_bytes = 8 << 20;  // each of stdout and stderr is cut beyond this
  // Called with each complete line of stdout and stderr as it arrives (DKMS builds take minutes).
  std::function<void(std::string_view line, bool is_stderr)> on_line;
  bool cr_ends_line = false;  // '\r' ends a line too (progress meters that redraw in place)
  // When this turns true the process group is killed within a second (the daemon is stopping, or the
  // reconcile pass ran past its time limit).
  const std::atomic<bool>* cancel = nullptr;

  std::string display() const;  // argv joined for messages
};

struct CommandResult {
  int exit_code = -1;   // valid when exited
  bool exited = false;  // false: killed by a signal, timed out or never started
  int signal = 0;
  bool timed_out = false;
  bool cancelled = false;     // killed because Command::cancel turned true
  bool start_failed = false;  // exec failed (program missing?)
  std::string out, err;
  bool out_truncated = false;
  std::chrono::milliseconds elapsed{0};

  bool success() const { return exited && exit_code == 0; }
  std::string describe() const;  // "exit 10", "killed by signal 9", "timed out after 30 s", …
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual CommandResult run(const Command& cmd) = 0;
};

// Gives every command run through it a cancel flag (unless it has its own): a reconcile pass's
// commands are killed when the daemon stops or the pass runs past its time limit.
class CancellingRunner final : public CommandRunner {
 public:
  CancellingRunner(CommandRunner& inner, const std::atomic<bool>* cancel) : inner_(inner), cancel_(cancel) {}
  CommandResult run(const Command& cmd) override {
    if (cmd.cancel || !cancel_) { return inner_.run(cmd); }
    Command c = cmd;
    c.cancel = cancel_;
    return inner_.run(c);
  }

 private:
  CommandRunner& inner_;
  const std::atomic<bool>* cancel_;
};

// Runs real processes: own process group, killed as a group on timeout.
class ProcessRunner final : public CommandRunner {
 public:
  CommandResult run(const Command& cmd) override;
};

// Test double: answers from a script keyed by argv prefix and records every call.
class ScriptedRunner final : public CommandRunner {
 public:
  using Responder = std::function<CommandResult(const Command&)>;
  void on(std::vector<std::string> argv_prefix, CommandResult result);
  void on(std::vector<std::string> argv_prefix, Responder responder);
  CommandResult run(const Command& cmd) override;
  const std::vector<std::vector<std::string>>& calls() const { return calls_; }
  // Calls whose argv[0] is program.
  std::size_t count(std::string_view program) const;

 private:
  std::vector<std::pair<std::vector<std::string>, Responder>> rules_;
  std::vector<std::vector<std::string>> calls_;
};

CommandResult exited_with(int code, std::string out = {}, std::string err = {});

}  // namespace p2pnode::sys
