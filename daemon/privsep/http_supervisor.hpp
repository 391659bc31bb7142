#pragma once
// The daemon keeps its HTTP process running. It holds the listening socket and the settings for
// the whole of its life, starts the process (http_process.hpp) and, when the process dies (a crash,
// or any process of its uid killing it), logs how and starts another after a backoff
// (restart_backoff.hpp). Connections made meanwhile wait in the socket's backlog: clients see a
// short gap, never a daemon gone. Driven by the daemon's main thread: tend() after every wake-up,
// and a sleep no longer than next_due(); SIGCHLD wakes it when the process dies.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "privsep/http_process.hpp"
#include "privsep/restart_backoff.hpp"

namespace p2pnode::privsep {

class HttpSupervisor {
 public:
  // Takes `listen_fd`. `settings` carry the certificate and key when serving TLS.
  HttpSupervisor(int listen_fd, HttpSettings settings, std::optional<Account> account, bool verbose, engine::LogFn log);
  ~HttpSupervisor();
  HttpSupervisor(const HttpSupervisor&) = delete;
  HttpSupervisor& operator=(const HttpSupervisor&) = delete;

  // The first process; an error when even that cannot start (the daemon then exits).
  Status start();
  // Its requests, and every later process's, are answered by `handler`.
  void serve(http::Handler handler);
  // Reaps a process that ended, and starts the next once its wait is over. Only from the thread
  // that called start(): a child's PR_SET_PDEATHSIG follows the thread that forked it.
  void tend();
  // How long until tend() has a start to make; nullopt while a process runs.
  std::optional<std::chrono::milliseconds> next_due() const;
  // New limits (and a certificate) for the running process, kept for every later one; settings
  // without a certificate keep the last one.
  Status send_settings(const HttpSettings& settings);
  // What the next process would start with.
  const HttpSettings& next_settings() const { return settings_; }
  // Starts after the first (p2pnode_http_child_restarts_total).
  std::uint64_t restarts() const { return restarts_.load(); }
  // p2pnode_http_child_restarts_total, in the Prometheus text format.
  std::string metrics_text() const;
  // Ends the running process; none is started after.
  void stop();

 private:
  Status spawn();
  void reap();
  void start_next();
  int listen_fd_;
  HttpSettings settings_;
  std::optional<Account> account_;
  bool verbose_;
  engine::LogFn log_;
  http::Handler handler_;
  std::unique_ptr<HttpProcess> process_;
  std::chrono::steady_clock::time_point started_at_;
  std::optional<std::chrono::steady_clock::time_point> due_;  // the next start, while none runs
  RestartBackoff backoff_;
  std::atomic<std::uint64_t> restarts_{0};
  bool stopped_ = false;
};

}  // namespace p2pnode::privsep
