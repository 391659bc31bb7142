#include "sys/command_runner.hpp"

#include <algorithm>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

extern char** environ;

namespace p2pnode::sys {
using Clock = std::chrono::steady_clock;

std::string Command::display() const {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) { s += ' '; }
    s += a.find(' ') == std::string::npos ? a : "'" + a + "'";
  }
  return s;
}

std::string CommandResult::describe() const {
  if (start_failed) { return "could not start: " + err; }
  if (timed_out) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "timed out after %.1f s", static_cast<double>(elapsed.count()) / 1000.0);
    return buf;
  }
  if (cancelled) { return "cancelled (the daemon is stopping, or the pass ran past reconcile.time_limit)"; }
  if (!exited) { return "killed by signal " + std::to_string(signal); }
  return "exit " + std::to_string(exit_code);
}

CommandResult exited_with(int code, std::string out, std::string err) {
  CommandResult r;
  r.exited = true;
  r.exit_code = code;
  r.out = std::move(out);
  r.err = std::move(err);
  return r;
}

namespace {
struct Stream {
  int fd;
  bool is_stderr;
  std::string* sink;
  std::string partial;
};

void emit_lines(Stream& s, const Command& cmd, bool flush) {
  if (!cmd.on_line) { return; }
  std::size_t pos;
  const char* ends = cmd.cr_ends_line ? "\n\r" : "\n";
  while ((pos = s.partial.find_first_of(ends)) != std::string::npos) {
    if (pos > 0 || s.partial[0] == '\n') { cmd.on_line(std::string_view(s.partial).substr(0, pos), s.is_stderr); }
    s.partial.erase(0, pos + 1);
  }
  if (flush && !s.partial.empty()) {
    cmd.on_line(s.partial, s.is_stderr);
    s.partial.clear();
  }
}

// The child's stdin from /dev/null, its stdout and stderr into the pipes, in cmd.cwd.
void proc_file_actions(posix_spawn_file_actions_t& fa, const Command& cmd, int out_fd, int err_fd) {
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  if (cmd.cwd) { posix_spawn_file_actions_addchdir_np(&fa, cmd.cwd->c_str()); }
}

// The child's own process group, no blocked signals, and the default action for those the
// daemon blocks or ignores.
void proc_spawn_attr(posix_spawnattr_t& attr) {
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // own group: a timeout kills the whole tree
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t dfl;
  sigemptyset(&dfl);
  sigaddset(&dfl, SIGPIPE);
  sigaddset(&dfl, SIGTERM);
  sigaddset(&dfl, SIGHUP);
  sigaddset(&dfl, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &dfl);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

// This process's environment less what cmd sets or unsets, then what cmd sets.
std::vector<std::string> proc_environment(const Command& cmd) {
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos && cmd.env.count(std::string(kv.substr(0, eq)))) { continue; }
    if (eq != std::string_view::npos &&
        std::find(cmd.unset_env.begin(), cmd.unset_env.end(), kv.substr(0, eq)) != cmd.unset_env.end()) {
      continue;
    }
    env_store.emplace_back(kv);
  }
  for (const auto& [k, v] : cmd.env) { env_store.push_back(k + "=" + v); }
  return env_store;
}

// An exec array: pointers into `store` (which must outlive it), then the null that ends it.
std::vector<char*> proc_c_strings(std::vector<std::string>& store) {
  std::vector<char*> pointers;
  for (auto& s : store) { pointers.push_back(s.data()); }
  pointers.push_back(nullptr);
  return pointers;
}

// Starts cmd with its stdout and stderr on the pipes' write ends; posix_spawnp's error (0: started).
// Everything the child needs is built here, before the spawn: nothing is allocated in the child.
int proc_spawn(const Command& cmd, int out_fd, int err_fd, pid_t& pid) {
  posix_spawn_file_actions_t fa;
  proc_file_actions(fa, cmd, out_fd, err_fd);
  posix_spawnattr_t attr;
  proc_spawn_attr(attr);
  std::vector<std::string> env_store = proc_environment(cmd);
  const std::vector<char*> envp = proc_c_strings(env_store);
  std::vector<std::string> argv_store = cmd.argv;
  const std::vector<char*> argv = proc_c_strings(argv_store);
  const int rc = ::posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc;
}

// Kills the whole group when the time is up or the command was cancelled; true when it did.
bool proc_kill_if_due(const Command& cmd, pid_t pid, std::chrono::milliseconds left, CommandResult& res) {
  if (left.count() <= 0) {
    res.timed_out = true;
  } else if (cmd.cancel && cmd.cancel->load()) {
    res.cancelled = true;
  } else {
    return false;
  }
  ::kill(-pid, SIGKILL);
  return true;
}

// Reads both pipes until the child closes them, the time is up or the command is cancelled:
// the output kept up to cmd.max_output_bytes, each line handed to cmd.on_line as it comes.
void proc_drain_output(const Command& cmd, pid_t pid, Clock::time_point deadline, std::array<Stream, 2>& streams,
                       CommandResult& res) {
  int open_streams = 2;
  char buf[16384];
  while (open_streams > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (proc_kill_if_due(cmd, pid, left, res)) { break; }
    std::array<pollfd, 2> pfds{};
    for (std::size_t i = 0; i < 2; ++i) { pfds[i] = {streams[i].fd, POLLIN, 0}; }
    const int n = ::poll(pfds.data(), 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) { break; }
    for (std::size_t i = 0; i < 2; ++i) {
      if (streams[i].fd < 0 || !(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) { continue; }
      const ssize_t got = ::read(streams[i].fd, buf, sizeof buf);
      if (got <= 0) {
        if (got < 0 && errno == EINTR) { continue; }
        ::close(streams[i].fd);
        streams[i].fd = -1;
        pfds[i].fd = -1;
        --open_streams;
        continue;
      }
      std::string& sink = *streams[i].sink;
      const std::size_t room = cmd.max_output_bytes > sink.size() ? cmd.max_output_bytes - sink.size() : 0;
      sink.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(got)));
      if (room < static_cast<std::size_t>(got)) { res.out_truncated = true; }
      streams[i].partial.append(buf, static_cast<std::size_t>(got));
      emit_lines(streams[i], cmd, false);
    }
  }
  for (auto& s : streams) {
    emit_lines(s, cmd, true);
    if (s.fd >= 0) { ::close(s.fd); }
  }
}

// A child may close its output and keep running (a daemonising script): the time limit still
// holds, so wait on a pidfd with the time left rather than blocking in waitpid.
void proc_wait_exit(const Command& cmd, pid_t pid, Clock::time_point deadline, CommandResult& res) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (proc_kill_if_due(cmd, pid, left, res)) { break; }
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
      if (n > 0) { break; }
      if (n < 0 && errno != EINTR) { break; }
    } else {
      // No pidfd (kernel < 5.3): look every few milliseconds.
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
        break;
      }
      ::poll(nullptr, 0, 5);
    }
  }
  if (pidfd >= 0) { ::close(pidfd); }
}

// Reaps the child and records how it ended and how long it took.
void proc_reap(pid_t pid, Clock::time_point start, CommandResult& res) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  // A timed-out child's group may still hold the pipe; it was killed above.
  res.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  if (WIFEXITED(status) && !res.timed_out && !res.cancelled) {
    res.exited = true;
    res.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res.signal = WTERMSIG(status);
  }
}
}  // namespace

CommandResult ProcessRunner::run(const Command& cmd) {
  CommandResult res;
  const auto start = Clock::now();
  if (cmd.argv.empty()) {
    res.start_failed = true;
    res.err = "empty argv";
    return res;
  }
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    res.start_failed = true;
    res.err = std::string("pipe: ") + std::strerror(errno);
    return res;
  }
  pid_t pid = -1;
  const int rc = proc_spawn(cmd, out_pipe[1], err_pipe[1], pid);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    res.start_failed = true;
    res.err = cmd.argv[0] + ": " + std::strerror(rc);
    return res;
  }

  std::array<Stream, 2> streams{Stream{out_pipe[0], false, &res.out, {}}, Stream{err_pipe[0], true, &res.err, {}}};
  const auto deadline = start + cmd.timeout;
  proc_drain_output(cmd, pid, deadline, streams, res);
  if (!res.timed_out && !res.cancelled) { proc_wait_exit(cmd, pid, deadline, res); }
  proc_reap(pid, start, res);
  return res;
}

void ScriptedRunner::on(std::vector<std::string> prefix, CommandResult result) {
  rules_.emplace_back(std::move(prefix), [result](const Command&) { return result; });
}

void ScriptedRunner::on(std::vector<std::string> prefix, Responder responder) {
  rules_.emplace_back(std::move(prefix), std::move(responder));
}

CommandResult ScriptedRunner::run(const Command& cmd) {
  calls_.push_back(cmd.argv);
  // Last matching rule wins, so a test can override an earlier default.
  for (auto it = rules_.rbegin(); it != rules_.rend(); ++it) {
    const auto& prefix = it->first;
    if (prefix.size() <= cmd.argv.size() && std::equal(prefix.begin(), prefix.end(), cmd.argv.begin())) {
      return it->second(cmd);
    }
  }
  CommandResult r;
  r.start_failed = true;
  r.err = "no scripted answer for: " + cmd.display();
  return r;
}

std::size_t ScriptedRunner::count(std::string_view program) const {
  std::size_t n = 0;
  for (const auto& c : calls_) {
    if (!c.empty() && c[0] == program) { ++n; }
  }
  return n;
}

}  // namespace p2pnode::sys
