#include "privsep/http_process.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "privsep/channel.hpp"
#include "privsep/http_child.hpp"

namespace p2pnode::privsep {
namespace {
std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + ::strsignal(WTERMSIG(status));
  return "stopped";
}
}  // namespace

HttpSettings settings_of(const http::ServerOptions& o) {
  HttpSettings s;
  s.threads = static_cast<std::uint32_t>(o.threads);
  s.max_body = o.max_body;
  s.max_connections = o.max_connections;
  s.max_connections_per_client = o.max_connections_per_client;
  s.request_timeout_ms = static_cast<std::uint64_t>(o.request_timeout.count());
  s.idle_timeout_ms = static_cast<std::uint64_t>(o.idle_timeout.count());
  s.max_connection_time_ms = static_cast<std::uint64_t>(o.max_connection_time.count());
  return s;
}

Result<std::unique_ptr<HttpProcess>> HttpProcess::start(http::Listener listener, const http::ServerOptions& options,
                                                        bool verbose, const engine::LogFn& log) {
  std::optional<Account> account;
  if (::geteuid() == 0) {
    auto a = find_unprivileged_account();
    if (!a) {
      ::close(listener.fd);
      return a.error();
    }
    if (!a->note.empty()) log({engine::LogLevel::warning, a->note, "", "privsep", ""});
    account = *a;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    ::close(listener.fd);
    return Error{std::string("socketpair: ") + std::strerror(errno), errno};
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    ::close(listener.fd);
    return Error{std::string("fork: ") + std::strerror(e), e};
  }
  if (pid == 0) run_http_child(ChildStart{listener.fd, sv[1], parent, options, account, verbose});
  ::close(sv[1]);
  ::close(listener.fd);  // the child alone accepts
  set_socket_timeouts(sv[0], 10000, 0);
  log({engine::LogLevel::notice, "HTTP served by process " + std::to_string(pid) + " as " +
                                     (account ? account->name + " (uid " + std::to_string(account->uid) + ")"
                                              : std::string("this user (not started as root)")) +
                                     ", without capabilities", "", "privsep", ""});
  return std::unique_ptr<HttpProcess>(new HttpProcess(pid, sv[0], log));
}

HttpProcess::~HttpProcess() { stop(); }

void HttpProcess::serve(http::Handler handler) {
  thread_ = std::thread([this, h = std::move(handler)] { answer_loop(h); });
}

void HttpProcess::answer_loop(http::Handler handler) {
  FrameReader reader(kMaxRequestFrame);
  for (;;) {
    auto frame = read_frame(fd_, reader);
    if (frame && !*frame) return;  // the child is gone; the main loop reaps it
    std::string problem;
    if (!frame) problem = frame.error().message;
    else if ((*frame)->type != FrameType::request) problem = "a frame that is not a request";
    Result<http::Request> req = problem.empty() ? decode_request((*frame)->payload) : Result<http::Request>(Error{problem});
    if (!req) {
      log_({engine::LogLevel::error, "the HTTP process sent " + req.error().message + ": killing it", "", "privsep", ""});
      ::kill(pid_, SIGKILL);
      return;
    }
    http::Response resp;
    try {
      resp = handler(*req);
    } catch (const std::exception& e) {
      // The text stays in the journal: it may name paths or values a client has no business seeing.
      log_({engine::LogLevel::error, "internal error answering " + req->method + " " + req->path + ": " + e.what(), "",
            "http", ""});
      resp = http::problem(500, "internal error (the daemon's log says what)");
    }
    std::lock_guard lk(write_mu_);
    if (!write_all(fd_, encode_frame(FrameType::response, (*frame)->id, encode_response(resp)))) {
      ::kill(pid_, SIGKILL);  // it stopped reading: it is stuck or hostile
      return;
    }
  }
}

Status HttpProcess::send_settings(const HttpSettings& settings) {
  std::lock_guard lk(write_mu_);
  return write_all(fd_, encode_frame(FrameType::settings, 0, encode_settings(settings)));
}

std::optional<std::string> HttpProcess::exited() {
  if (reaped_) return "reaped";
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  reaped_ = true;
  return describe_status(status);
}

void HttpProcess::stop() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);  // the child reads the end of stream and exits
  if (!reaped_) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!exited() && std::chrono::steady_clock::now() < deadline) ::usleep(10000);
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
    }
  }
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace p2pnode::privsep
