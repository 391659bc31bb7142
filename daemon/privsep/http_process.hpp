#pragma once
// The daemon's side of privilege separation: it starts the HTTP process (http_child.hpp), which
// parses HTTP and terminates TLS without root, and answers its requests with the daemon's routes.
// The token and the routes stay here, in the root process; the child sees only requests.
#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "http/server.hpp"
#include "privsep/drop.hpp"
#include "privsep/frame.hpp"

namespace p2pnode::privsep {

// Whom the HTTP process becomes: as root the system account p2pnode (nobody:nogroup when that is
// missing, logged); otherwise nobody to become (nullopt): it stays this user, confined the same way.
Result<std::optional<Account>> http_account(const engine::LogFn& log);

class HttpProcess {
 public:
  // Forks and executes this program again as the HTTP process (`p2pnode-serve http-child`), which
  // shares `listen_fd` (left open here) and one end of a new socketpair, then sends it `settings`,
  // the first frame it waits for. Fork and exec, never a fork that goes on running this program: the
  // daemon has threads by the time it starts a second one, and a fork copies only the caller's.
  // Call it from the thread that lives as long as the daemon: PR_SET_PDEATHSIG follows that thread.
  static Result<std::unique_ptr<HttpProcess>> start(int listen_fd, const HttpSettings& settings,
                                                    const std::optional<Account>& account, bool verbose,
                                                    const engine::LogFn& log);
  ~HttpProcess();
  HttpProcess(const HttpProcess&) = delete;
  HttpProcess& operator=(const HttpProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Answers the child's requests with `handler` on a thread of its own. A malformed frame from
  // the child kills it: the daemon then sees it gone (exited()).
  void serve(http::Handler handler);
  // New limits and, with TLS, a new certificate for the child (SIGHUP).
  Status send_settings(const HttpSettings& settings);
  // Non-blocking: how the child ended, once it has (it is reaped then); nullopt while it runs.
  std::optional<std::string> exited();
  // Ends the child (the end of stream, then SIGTERM, then SIGKILL) and the answering thread.
  void stop();

 private:
  HttpProcess(pid_t pid, int fd, engine::LogFn log) : pid_(pid), fd_(fd), log_(std::move(log)) {}
  void answer_loop(http::Handler handler);
  pid_t pid_;
  int fd_;
  engine::LogFn log_;
  std::mutex write_mu_;
  std::thread thread_;
  bool reaped_ = false;
  std::string how_it_ended_;
};

// The child's settings from the daemon's (the certificate is added apart).
HttpSettings settings_of(const http::ServerOptions& o);

}  // namespace p2pnode::privsep
