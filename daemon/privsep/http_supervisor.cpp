#include "privsep/http_supervisor.hpp"

#include <unistd.h>

#include <algorithm>

namespace p2pnode::privsep {
namespace {
using Clock = std::chrono::steady_clock;

std::string seconds_text(std::chrono::milliseconds d) {
  const auto tenths = d.count() / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}
}  // namespace

HttpSupervisor::HttpSupervisor(int listen_fd, HttpSettings settings, std::optional<Account> account, bool verbose,
                               engine::LogFn log)
    : listen_fd_(listen_fd),
      settings_(std::move(settings)),
      account_(std::move(account)),
      verbose_(verbose),
      log_(std::move(log)) {}

HttpSupervisor::~HttpSupervisor() {
  stop();
  std::fill(settings_.tls_key.begin(), settings_.tls_key.end(), '\0');
  if (listen_fd_ >= 0) { ::close(listen_fd_); }
}

Status HttpSupervisor::start() { return spawn(); }

Status HttpSupervisor::spawn() {
  auto p = HttpProcess::start(listen_fd_, settings_, account_, verbose_, log_);
  if (!p) { return p.error(); }
  process_ = std::move(p).value();
  started_at_ = Clock::now();
  return Status::success();
}

void HttpSupervisor::serve(http::Handler handler) {
  handler_ = std::move(handler);
  if (process_) { process_->serve(handler_); }
}

void HttpSupervisor::tend() {
  if (stopped_) { return; }
  if (process_) { reap(); }
  if (!process_ && due_ && Clock::now() >= *due_) { start_next(); }
}

void HttpSupervisor::reap() {
  const auto how = process_->exited();
  if (!how) { return; }
  const auto uptime = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_at_);
  const pid_t pid = process_->pid();
  process_->stop();  // joins its answering thread, which saw the end of stream
  process_.reset();
  const auto wait = backoff_.after_exit(uptime);
  due_ = Clock::now() + wait;
  log_({engine::LogLevel::error,
        "the HTTP process " + std::to_string(pid) + " " + *how + " after " + seconds_text(uptime) +
            ": starting another in " + seconds_text(wait) + " (connections wait in the listening socket's backlog)",
        "", "privsep", ""});
}

void HttpSupervisor::start_next() {
  due_.reset();
  if (auto st = spawn(); !st) {
    const auto wait = backoff_.after_failed_start();
    due_ = Clock::now() + wait;
    log_({engine::LogLevel::error,
          "cannot start the HTTP process: " + st.error().message + "; trying again in " + seconds_text(wait) +
              " (the daemon goes on reconciling)",
          "", "privsep", ""});
    return;
  }
  ++restarts_;
  if (handler_) { process_->serve(handler_); }
}

std::optional<std::chrono::milliseconds> HttpSupervisor::next_due() const {
  if (!due_ || stopped_) { return std::nullopt; }
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*due_ - Clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

Status HttpSupervisor::send_settings(const HttpSettings& settings) {
  HttpSettings kept = settings;
  if (kept.tls_chain.empty()) {  // no new certificate: the next process serves the last one
    kept.tls_chain = settings_.tls_chain;
    kept.tls_key = settings_.tls_key;
    kept.tls_describe = settings_.tls_describe;
  }
  std::fill(settings_.tls_key.begin(), settings_.tls_key.end(), '\0');
  settings_ = std::move(kept);
  if (!process_) {
    return Status::success();  // the next one starts with them
  }
  return process_->send_settings(settings);
}

std::string HttpSupervisor::metrics_text() const {
  return "# HELP p2pnode_http_child_restarts_total Times the daemon started its HTTP process again after it ended "
         "(privilege separation)\n"
         "# TYPE p2pnode_http_child_restarts_total counter\n"
         "p2pnode_http_child_restarts_total " +
         std::to_string(restarts_.load()) + "\n";
}

void HttpSupervisor::stop() {
  stopped_ = true;
  due_.reset();
  if (process_) { process_->stop(); }
  process_.reset();
}

}  // namespace p2pnode::privsep
