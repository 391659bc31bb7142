#include "http/server.hpp"
#include "http/connection_reaper.hpp"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <set>

#include "engine/metrics.hpp"
#include "sys/private_file.hpp"
#include "tls/server_context.hpp"

namespace p2pnode::http {

namespace {
using json = nlohmann::json;
constexpr const char* kJson = "application/json";
constexpr const char* kProblem = "application/problem+json";

// A fixed pool with a bounded queue: when every worker is busy and the queue is full, the accept
// loop waits here (the kernel's listen backlog holds the rest) instead of piling up memory.
class BoundedPool final : public httplib::TaskQueue {
 public:
  BoundedPool(std::size_t threads, std::size_t max_queue, ConnectionReaper* reaper)
      : max_queue_(max_queue), reaper_(reaper) {
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
  }
  ~BoundedPool() override = default;
  void enqueue(std::function<void()> fn) override {
    std::unique_lock lk(mu_);
    space_.wait(lk, [&] { return jobs_.size() < max_queue_ || shutdown_; });
    if (shutdown_) {
      lk.unlock();
      fn();  // still runs, so the connection is closed by its own code
      return;
    }
    jobs_.push_back(std::move(fn));
    work_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard lk(mu_);
      shutdown_ = true;
    }
    work_.notify_all();
    space_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lk(mu_);
        work_.wait(lk, [&] { return !jobs_.empty() || shutdown_; });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      space_.notify_one();
      if (reaper_) reaper_->connection_started();
      fn();
      if (reaper_) reaper_->connection_finished();
    }
  }
  std::size_t max_queue_;
  ConnectionReaper* reaper_;  // told when a worker holds a connection
  std::mutex mu_;
  std::condition_variable work_, space_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  bool shutdown_ = false;
};

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 416: return "Range Not Satisfiable";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

void problem(httplib::Response& res, int status, const std::string& detail, json extra = json::object()) {
  json j = {{"type", "about:blank"}, {"title", reason_phrase(status)}, {"status", status}, {"detail", detail}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  res.status = status;
  res.set_content(j.dump(), kProblem);
}

const std::map<std::string, std::string>& known_paths() {  // path -> Allow
  static const std::map<std::string, std::string> m = {
      {"/livez", "GET, HEAD"},         {"/readyz", "GET, HEAD"},         {"/metrics", "GET, HEAD"},
      {"/v1/status", "GET, HEAD"},     {"/v1/findings", "GET, HEAD"},    {"/v1/devices", "GET, HEAD"},
      {"/v1/topology", "GET, HEAD"},   {"/v1/plan", "GET, HEAD"},        {"/v1/selftest", "GET, HEAD, POST"},
      {"/v1/reconcile", "POST"}};
  return m;
}
}  // namespace

bool token_equal(std::string_view a, std::string_view b) {
  // Compare over the longer length so the time does not depend on where they differ.
  const std::size_t n = std::max(a.size(), b.size());
  volatile unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

Result<std::string> read_token_file(const std::filesystem::path& path) {
  if (auto st = sys::check_owner_only(path, "token file"); !st) return st.error();
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > 4096)
    return Error{"token file " + path.string() + " is larger than 4096 bytes"};
  std::ifstream in(path, std::ios::binary);
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.size() < 16) return Error{"token file " + path.string() + " holds fewer than 16 characters"};
  return token;
}

// Gives access to the listening socket, to set options httplib 0.11 has no setter for.
template <class Base>
class Listening final : public Base {
 public:
  using Base::Base;
  int listen_fd() const { return this->svr_sock_; }
};

struct ApiServer::Impl {
  engine::Engine& engine;
  ServerOptions opt;
  std::unique_ptr<tls::CurrentIdentity> identity;  // HTTPS only; outlives svr, whose TLS context points at it
  std::string tls_problem;
  std::unique_ptr<httplib::Server> svr;
  std::function<int()> listen_fd;
  int bound_port = 0;
  std::unique_ptr<ConnectionReaper> reaper;  // the lifetime limit httplib lacks
  std::thread thread;
  std::mutex token_mu;
  std::string token, token_problem = "no token file was read";

  Impl(engine::Engine& e, ServerOptions o) : engine(e), opt(std::move(o)) {
    if (!opt.tls) {
      auto plain = std::make_unique<Listening<httplib::Server>>();
      listen_fd = [s = plain.get()] { return s->listen_fd(); };
      svr = std::move(plain);
      return;
    }
    identity = std::make_unique<tls::CurrentIdentity>(std::move(opt.tls));  // the key lives in one place
    // The same hardening applies: SSLServer only wraps each accepted socket in a TLS session,
    // whose handshake is bounded by the read timeout.
    auto secure = std::make_unique<Listening<httplib::SSLServer>>(std::function<bool(SSL_CTX&)>([this](SSL_CTX& ctx) {
      auto st = tls::configure_server_context(ctx, *identity);
      if (!st) tls_problem = st.error().message;
      return st.ok();
    }));
    listen_fd = [s = secure.get()] { return s->listen_fd(); };
    svr = std::move(secure);
  }

  bool authorized(const httplib::Request& req, httplib::Response& res) {
    std::string t, why;
    {
      std::lock_guard lk(token_mu);
      t = token;
      why = token_problem;
    }
    if (t.empty()) {
      problem(res, 503, "mutating endpoints are disabled: " + why);
      return false;
    }
    const std::string h = req.get_header_value("Authorization");
    static constexpr std::string_view kBearer = "Bearer ";
    if (h.size() <= kBearer.size() || h.compare(0, kBearer.size(), kBearer) != 0) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"p2pnode\"");
      problem(res, 401, "this endpoint needs 'Authorization: Bearer <token>' (the token is in the daemon's token_file)");
      return false;
    }
    if (!token_equal(std::string_view(h).substr(kBearer.size()), t)) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"p2pnode\", error=\"invalid_token\"");
      problem(res, 401, "the bearer token is not valid");
      return false;
    }
    return true;
  }

  void post(const httplib::Request& req, httplib::Response& res, bool selftest) {
    if (!authorized(req, res)) return;
    const auto r = engine.request(selftest ? "api-selftest" : "api", selftest);
    res.status = 202;
    res.set_content(json{{"accepted", true}, {"request", engine::to_string(r)}, {"selftest", selftest}}.dump(), kJson);
  }

  void get(const char* path, std::string engine::Snapshot::*body, const char* type) {
    svr->Get(path, [this, body, type](const httplib::Request&, httplib::Response& res) {
      auto snap = engine.snapshot();
      res.set_content((*snap).*body, type);
    });
  }

  void routes() {
    svr->Get("/livez", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"status":"alive"})", kJson);
    });
    svr->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      auto snap = engine.snapshot();
      if (snap->ready) {
        res.set_content(snap->readyz, kJson);
        return;
      }
      const auto& st = snap->state;
      problem(res, 503, std::string("the node is ") + engine::to_string(st.state),
              {{"state", engine::to_string(st.state)}, {"ready", false}, {"reasons", st.reasons}});
    });
    get("/v1/status", &engine::Snapshot::status, kJson);
    svr->Get("/v1/findings", [this](const httplib::Request& req, httplib::Response& res) {
      auto snap = engine.snapshot();
      const std::string accept = req.get_header_value("Accept");
      if (accept.find("text/plain") != std::string::npos && accept.find("json") == std::string::npos)
        res.set_content(snap->findings_table, "text/plain; charset=utf-8");
      else
        res.set_content(snap->findings, kJson);
    });
    get("/v1/devices", &engine::Snapshot::devices, kJson);
    get("/v1/topology", &engine::Snapshot::topology, kJson);
    get("/v1/plan", &engine::Snapshot::plan, kJson);
    get("/v1/selftest", &engine::Snapshot::selftest, kJson);
    get("/metrics", &engine::Snapshot::metrics, engine::kMetricsContentType);
    svr->Post("/v1/reconcile", [this](const httplib::Request& req, httplib::Response& res) { post(req, res, false); });
    svr->Post("/v1/selftest", [this](const httplib::Request& req, httplib::Response& res) { post(req, res, true); });
  }

  void limits() {
    svr->new_task_queue = [this] {
      return new BoundedPool(static_cast<std::size_t>(opt.threads), opt.queue, reaper.get());
    };
    svr->set_payload_max_length(opt.max_body);
    svr->set_read_timeout(opt.read_timeout_s, 0);
    svr->set_write_timeout(opt.write_timeout_s, 0);
    svr->set_keep_alive_timeout(opt.keep_alive_timeout_s);
    svr->set_keep_alive_max_count(opt.keep_alive_max);
    svr->set_tcp_nodelay(true);

    svr->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.headers.size() > opt.max_headers) {
        problem(res, 431, "more than " + std::to_string(opt.max_headers) + " header fields");
        return httplib::Server::HandlerResponse::Handled;
      }
      // `curl -X POST` sends neither Content-Length nor a body, which httplib would answer with
      // 400; these endpoints take no body, so answer them here.
      if (req.method == "POST" && !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding") &&
          (req.path == "/v1/reconcile" || req.path == "/v1/selftest")) {
        post(req, res, req.path == "/v1/selftest");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    svr->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;  // a handler already wrote its problem document
      if (res.status == 404) {
        auto it = known_paths().find(req.path);
        if (it != known_paths().end()) {
          res.set_header("Allow", it->second);
          problem(res, 405, req.method + " is not allowed on " + req.path + "; allowed: " + it->second);
          return;
        }
        problem(res, 404, "no such endpoint; see api/openapi.yaml");
        return;
      }
      problem(res, res.status, res.status == 413 ? "the request body is larger than the daemon accepts"
                               : res.status == 400 ? "the request could not be parsed as HTTP/1.1"
                                                   : "the request was refused");
    });
    svr->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      problem(res, 500, "internal error: " + what);
    });
  }
};

ApiServer::ApiServer(engine::Engine& engine, ServerOptions options) : impl_(std::make_unique<Impl>(engine, std::move(options))) {
  impl_->limits();
  impl_->routes();
}

ApiServer::~ApiServer() { stop(); }

Result<int> ApiServer::bind() {
  auto& o = impl_->opt;
  if (!impl_->svr->is_valid()) return Error{"cannot set up TLS: " + impl_->tls_problem};
  if (o.listen.port == 0) {
    const int port = impl_->svr->bind_to_any_port(o.listen.host);
    if (port <= 0) return Error{"cannot listen on " + o.listen.host + " (any port)"};
    impl_->bound_port = port;
    return port;
  }
  if (!impl_->svr->bind_to_port(o.listen.host, o.listen.port))
    return Error{"cannot listen on " + o.listen.display() + ": " + std::strerror(errno), errno};
  impl_->bound_port = o.listen.port;
  return o.listen.port;
}

namespace {
// Idle connections (connected, nothing sent) stay in the kernel until their first bytes arrive
// (TCP_DEFER_ACCEPT), so they never hold one of the fixed workers.
// httplib 0.11 listens with a backlog of 5, under which the kernel gives up deferring at once;
// listen() again on the bound socket raises it.
void defer_accept(int fd) {
  int defer_s = 10;
  ::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof defer_s);
  ::listen(fd, 256);
}
}  // namespace

void ApiServer::start() {
  defer_accept(impl_->listen_fd());
  impl_->reaper = std::make_unique<ConnectionReaper>(impl_->bound_port, impl_->opt.max_connection_time);
  impl_->reaper->start();
  impl_->thread = std::thread([this] { impl_->svr->listen_after_bind(); });
}

void ApiServer::stop() {
  if (!impl_) return;
  if (impl_->reaper) impl_->reaper->stop();
  impl_->svr->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

bool ApiServer::set_tls_identity(std::shared_ptr<const tls::Identity> identity) {
  if (!impl_->identity || !identity) return false;
  impl_->identity->set(std::move(identity));
  return true;
}

bool ApiServer::serves_tls() const { return impl_->identity != nullptr; }

void ApiServer::set_token(std::string token, std::string problem_text) {
  std::lock_guard lk(impl_->token_mu);
  impl_->token = std::move(token);
  impl_->token_problem = std::move(problem_text);
}

}  // namespace p2pnode::http
