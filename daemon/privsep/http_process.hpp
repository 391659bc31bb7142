#pragma once
// The daemon's side of privilege separation: it forks the HTTP process (http_child.hpp), which
// parses HTTP and terminates TLS without root, and answers its requests with the daemon's routes.
// The token and the routes stay here, in the root process; the child sees only requests.
#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "http/server.hpp"
#include "privsep/frame.hpp"

namespace p2pnode::privsep {

class HttpProcess {
 public:
  // Forks the HTTP process; call it while this process has a single thread (before the engine
  // starts), since the child goes on running this program's code. It takes `listener` (closed
  // here) and `options`. As root the child becomes the system account p2pnode (nobody:nogroup
  // when that is missing, logged); otherwise it stays this user, confined the same way.
  static Result<std::unique_ptr<HttpProcess>> start(http::Listener listener, const http::ServerOptions& options,
                                                    bool verbose, const engine::LogFn& log);
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
};

// The child's settings from the daemon's (the certificate is added apart).
HttpSettings settings_of(const http::ServerOptions& o);

}  // namespace p2pnode::privsep
