#include "privsep/http_process.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "privsep/channel.hpp"
#include "privsep/spawn.hpp"

namespace p2pnode::privsep {
namespace {
std::string describe_status(int status) {
  if (WIFEXITED(status)) { return "exited with status " + std::to_string(WEXITSTATUS(status)); }
  if (WIFSIGNALED(status)) { return std::string("killed by signal ") + ::strsignal(WTERMSIG(status)); }
  return "stopped";
}

// The child's command line after argv[0]: who its parent is (checked after it drops root), whom to
// become, how much to log.
std::vector<std::string> child_args(const std::optional<Account>& account, bool verbose) {
  std::vector<std::string> a = {"http-child", "--parent", std::to_string(::getpid())};
  if (account) {
    for (const std::string& s : {std::string("--account"), account->name, std::string("--uid"),
                                 std::to_string(account->uid), std::string("--gid"), std::to_string(account->gid)}) {
      a.push_back(s);
    }
  }
  if (verbose) { a.push_back("--verbose"); }
  return a;
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

Result<std::optional<Account>> http_account(const engine::LogFn& log) {
  if (::geteuid() != 0) { return std::optional<Account>(); }
  auto a = find_unprivileged_account();
  if (!a) { return a.error(); }
  if (!a->note.empty()) { log({engine::LogLevel::warning, a->note, "", "privsep", ""}); }
  return std::optional<Account>(*a);
}

Result<std::unique_ptr<HttpProcess>> HttpProcess::start(int listen_fd, const HttpSettings& settings,
                                                        const std::optional<Account>& account, bool verbose,
                                                        const engine::LogFn& log) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Error{std::string("socketpair: ") + std::strerror(errno), errno};
  }
  auto pid = spawn_http_child(listen_fd, sv[1], child_args(account, verbose));
  ::close(sv[1]);
  if (!pid) {
    ::close(sv[0]);
    return pid.error();
  }
  set_socket_timeouts(sv[0], 10000, 0);
  std::unique_ptr<HttpProcess> p(new HttpProcess(*pid, sv[0], log));
  // A child that dies before it reads this is seen gone like any other (exited()).
  if (auto st = p->send_settings(settings); !st) {
    log({engine::LogLevel::warning,
         "the HTTP process " + std::to_string(*pid) + " did not take its settings: " + st.error().message, "",
         "privsep", ""});
  }
  log({engine::LogLevel::notice,
       "HTTP served by process " + std::to_string(*pid) + " as " +
           (account ? account->name + " (uid " + std::to_string(account->uid) + ")"
                    : std::string("this user (not started as root)")) +
           ", without capabilities",
       "", "privsep", ""});
  return p;
}

HttpProcess::~HttpProcess() { stop(); }

void HttpProcess::serve(http::Handler handler) {
  thread_ = std::thread([this, h = std::move(handler)] { answer_loop(h); });
}

void HttpProcess::answer_loop(http::Handler handler) {
  FrameReader reader(kMaxRequestFrame);
  for (;;) {
    auto frame = read_frame(fd_, reader);
    if (frame && !*frame) {
      return;  // the child is gone; the main loop reaps it
    }
    std::string problem;
    if (!frame) {
      problem = frame.error().message;
    } else if ((*frame)->type != FrameType::request) {
      problem = "a frame that is not a request";
    }
    Result<http::Request> req =
        problem.empty() ? decode_request((*frame)->payload) : Result<http::Request>(Error{problem});
    if (!req) {
      log_({engine::LogLevel::error, "the HTTP process sent " + req.error().message + ": killing it", "", "privsep",
            ""});
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
  if (reaped_) { return how_it_ended_; }
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) { return std::nullopt; }
  reaped_ = true;
  how_it_ended_ = describe_status(status);
  return how_it_ended_;
}

void HttpProcess::stop() {
  if (fd_ >= 0) {
    ::shutdown(fd_, SHUT_RDWR);  // the child reads the end of stream and exits
  }
  if (!reaped_) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!exited() && std::chrono::steady_clock::now() < deadline) { ::usleep(10000); }
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
      reaped_ = true;
    }
  }
  if (thread_.joinable()) { thread_.join(); }
  if (fd_ >= 0) { ::close(fd_); }
  fd_ = -1;
}

}  // namespace p2pnode::privsep
