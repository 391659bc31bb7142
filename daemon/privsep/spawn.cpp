#include "privsep/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

extern char** environ;

namespace p2pnode::privsep {
namespace {

constexpr const char* kSelf = "/proc/self/exe";

// What the child must not inherit: it is not the service's main process, and holds no socket of systemd's.
bool systemd_variable(std::string_view entry) {
  for (std::string_view v :
       {"NOTIFY_SOCKET=", "WATCHDOG_PID=", "WATCHDOG_USEC=", "LISTEN_FDS=", "LISTEN_PID=", "LISTEN_FDNAMES="}) {
    if (entry.substr(0, v.size()) == v) { return true; }
  }
  return false;
}

// argv and envp as execve takes them, built before the fork (building them after would allocate).
struct ExecPlan {
  std::vector<std::string> args;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ExecPlan plan_exec(const std::vector<std::string>& args) {
  ExecPlan p;
  p.args.push_back("p2pnode-serve");
  p.args.insert(p.args.end(), args.begin(), args.end());
  for (auto& a : p.args) { p.argv.push_back(a.data()); }
  p.argv.push_back(nullptr);
  for (char** e = environ; e && *e; ++e) {
    if (!systemd_variable(*e)) { p.envp.push_back(*e); }
  }
  p.envp.push_back(nullptr);
  return p;
}

// In the child, from fork to exec: async-signal-safe calls only. 126: the setup failed, 127: exec did.
[[noreturn]] void become_http_child(pid_t parent, int listen_fd, int channel_fd, const ExecPlan& plan) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) { ::_exit(126); }
  // Above 4 first, so that neither dup2 clobbers the other descriptor.
  const int l = ::fcntl(listen_fd, F_DUPFD, kChildChannelFd + 1);
  const int c = ::fcntl(channel_fd, F_DUPFD, kChildChannelFd + 1);
  if (l < 0 || c < 0 || ::dup2(l, kChildListenFd) < 0 || ::dup2(c, kChildChannelFd) < 0) { ::_exit(126); }
  if (::syscall(SYS_close_range, kChildChannelFd + 1, ~0U, 0) != 0) { ::_exit(126); }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the daemon blocks its signals for sigtimedwait
  ::execve(kSelf, plan.argv.data(), plan.envp.data());
  ::_exit(127);
}

}  // namespace

Result<pid_t> spawn_http_child(int listen_fd, int channel_fd, const std::vector<std::string>& args) {
  const ExecPlan plan = plan_exec(args);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) { return Error{std::string("fork: ") + std::strerror(errno), errno}; }
  if (pid == 0) { become_http_child(parent, listen_fd, channel_fd, plan); }
  return pid;
}

}  // namespace p2pnode::privsep
