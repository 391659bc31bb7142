#include "privsep/http_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>

#include "http/server.hpp"
#include "privsep/channel.hpp"
#include "privsep/spawn.hpp"
#include "service/systemd.hpp"

namespace p2pnode::privsep {
namespace {

constexpr int kListenFd = kChildListenFd;
constexpr int kChannelFd = kChildChannelFd;
// The daemon answers from a published snapshot or queues work: far below this. Past it the
// client gets 503 and the late answer is dropped.
constexpr auto kAnswerDeadline = std::chrono::seconds(10);

// One line per event on stderr: the journal's stream under systemd (its priority as a <N> prefix),
// the terminal or the tests' log file otherwise: the one stream the daemon handed down.
engine::LogFn stderr_logger(bool verbose) {
  const bool journal = service::stderr_is_journal();
  auto mu = std::make_shared<std::mutex>();
  return [verbose, journal, mu](const engine::LogEvent& e) {
    if (e.level == engine::LogLevel::debug && !verbose) { return; }
    static constexpr const char* kPriority[] = {"<7>", "<6>", "<5>", "<4>", "<3>"};
    static constexpr const char* kName[] = {"debug", "info", "notice", "warning", "error"};
    const auto level = static_cast<std::size_t>(e.level);
    std::string line = journal && level < 5 ? kPriority[level] : "";
    line += std::string("p2pnode-http[") + (level < 5 ? kName[level] : "?") + "] " + e.step + ": " + e.message + "\n";
    std::lock_guard lk(*mu);
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  };
}

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "p2pnode-http: %s\n", why.c_str());
  ::_exit(1);
}

// Requests out, answers in: each event loop thread waits for the answer with its own id.
class Forwarder {
 public:
  explicit Forwarder(int fd) : fd_(fd) {}

  http::Response forward(const http::Request& req) {
    std::unique_lock lk(mu_);
    if (closed_) { return http::problem(503, "the daemon is stopping"); }
    const std::uint64_t id = next_id_++;
    answers_[id];
    lk.unlock();
    Status sent;
    {
      std::lock_guard wl(write_mu_);
      sent = write_all(fd_, encode_frame(FrameType::request, id, encode_request(req)));
    }
    lk.lock();
    if (sent) {
      cv_.wait_for(lk, kAnswerDeadline, [&] { return closed_ || answers_[id].has_value(); });
    }
    auto node = answers_.extract(id);
    if (node.mapped()) { return std::move(*node.mapped()); }
    return http::problem(503, closed_ || !sent ? "the daemon is stopping" : "the daemon did not answer in time");
  }

  void deliver(std::uint64_t id, http::Response r) {
    std::lock_guard lk(mu_);
    auto it = answers_.find(id);
    if (it == answers_.end()) {
      return;  // its client had its 503 already
    }
    it->second = std::move(r);
    cv_.notify_all();
  }

  void close() {
    std::lock_guard lk(mu_);
    closed_ = true;
    cv_.notify_all();
  }

 private:
  int fd_;
  std::mutex write_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, std::optional<http::Response>> answers_;
  std::uint64_t next_id_ = 1;
  bool closed_ = false;
};

http::ServerOptions with_settings(http::ServerOptions o, const HttpSettings& s) {
  o.threads = static_cast<int>(s.threads);
  o.max_body = s.max_body;
  o.max_connections = s.max_connections;
  o.max_connections_per_client = s.max_connections_per_client;
  o.request_timeout = std::chrono::milliseconds(s.request_timeout_ms);
  o.idle_timeout = std::chrono::milliseconds(s.idle_timeout_ms);
  o.max_connection_time = std::chrono::milliseconds(s.max_connection_time_ms);
  return o;
}

void apply_settings(http::ApiServer& server, const http::ServerOptions& current, const HttpSettings& s,
                    const engine::LogFn& log) {
  std::string why;
  if (!server.set_limits(with_settings(current, s), &why)) {
    log({engine::LogLevel::error, "the new HTTP limits could not take effect, the previous ones stay: " + why, "",
         "http", ""});
  }
  if (s.tls_chain.empty()) { return; }
  auto pem = std::make_shared<tls::PemIdentity>();
  pem->chain = s.tls_chain;
  pem->key = tls::SecretPem(s.tls_key);
  if (server.set_tls_identity(std::move(pem), &why)) {
    log({engine::LogLevel::notice, "TLS certificate reloaded for new connections: " + s.tls_describe, "", "tls", ""});
  } else {
    log({engine::LogLevel::error, "TLS certificate not reloaded, the previous one is served: " + why, "", "tls", ""});
  }
}

// The daemon's first frame: the limits to serve with and, with TLS, the certificate and key. It
// sends it at once; a daemon that does not is stuck, and this process has nothing to serve with.
HttpSettings first_settings(FrameReader& reader) {
  set_socket_timeouts(kChannelFd, 10000, 10000);
  auto frame = read_frame(kChannelFd, reader);
  if (!frame || !*frame || (*frame)->type != FrameType::settings) {
    die("the daemon did not send the settings first" + (frame ? std::string() : ": " + frame.error().message));
  }
  auto s = decode_settings((*frame)->payload);
  if (!s) { die(s.error().message); }
  set_socket_timeouts(kChannelFd, 10000, 0);
  return std::move(s).value();
}

http::ServerOptions initial_options(const HttpSettings& s, const engine::LogFn& log) {
  http::ServerOptions o = with_settings(http::ServerOptions{}, s);
  o.log = log;
  if (!s.tls_chain.empty()) {
    auto pem = std::make_shared<tls::PemIdentity>();
    pem->chain = s.tls_chain;
    pem->key = tls::SecretPem(s.tls_key);
    o.tls = std::move(pem);
  }
  return o;
}

}  // namespace

void run_http_child(const ChildStart& start) {
  // The daemon's death ends this process (set before the exec, which keeps it); it may be gone already.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != start.parent) { ::_exit(1); }
  ::prctl(PR_SET_NAME, "p2pnode-http");  // not "exe", as /proc/self/exe would name it
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);  // the daemon reloads and sends the settings that concern us
  // Nothing this process runs is to inherit them (it runs nothing; this holds if that changes).
  ::fcntl(kListenFd, F_SETFD, FD_CLOEXEC);
  ::fcntl(kChannelFd, F_SETFD, FD_CLOEXEC);

  Status confined = start.account ? drop_privileges(*start.account) : confine_unprivileged();
  if (!confined) { die("refusing to serve HTTP: " + confined.error().message); }
  // A change of uid or gid clears the parent-death signal: set it again, then check the parent.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != start.parent) { ::_exit(1); }

  const engine::LogFn log = stderr_logger(start.verbose);
  FrameReader reader(kMaxResponseFrame);
  http::ServerOptions options = initial_options(first_settings(reader), log);
  Forwarder forwarder(kChannelFd);
  http::ApiServer* served = nullptr;
  http::ApiServer server(
      kListenFd,
      [&](const http::Request& req) {
        http::Response r = forwarder.forward(req);
        // What this process shed is counted here: /metrics gets it appended.
        if (r.status == 200 && req.path == "/metrics" && served) { r.body += served->connection_metrics(); }
        return r;
      },
      options);
  served = &server;
  if (auto st = server.start(); !st) { die(st.error().message); }

  int code = 0;
  for (;;) {
    auto frame = read_frame(kChannelFd, reader);
    if (!frame) {
      log({engine::LogLevel::error, "from the daemon: " + frame.error().message, "", "privsep", ""});
      code = 1;
      break;
    }
    if (!*frame) {
      break;  // the daemon closed its end: it is stopping
    }
    const Frame& f = **frame;
    if (f.type == FrameType::response) {
      auto r = decode_response(f.payload);
      if (!r) { die(r.error().message); }
      forwarder.deliver(f.id, std::move(r).value());
    } else if (f.type == FrameType::settings) {
      auto s = decode_settings(f.payload);
      if (!s) { die(s.error().message); }
      apply_settings(server, options, *s, log);
      options = with_settings(options, *s);
    } else {
      die("unexpected frame type from the daemon");
    }
  }
  forwarder.close();
  server.stop();
  ::_exit(code);
}

}  // namespace p2pnode::privsep
