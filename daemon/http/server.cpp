#include "http/server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>

#include "http/connection_guard.hpp"
#include "http/received_head.hpp"
#include "sys/private_file.hpp"
#include "tls/pem.hpp"

namespace p2pnode::http {

Result<std::string> read_token_file(const std::filesystem::path& path) {
  auto read = sys::read_private_file(path, "token file", 4096);
  if (!read) { return read.error(); }
  std::string token = std::move(read).value();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) { token.pop_back(); }
  if (token.size() < 16) { return Error{"token file " + path.string() + " holds fewer than 16 characters"}; }
  return token;
}

namespace {
// The client's address as the per-client limit counts it ("127.0.0.1", "::1"; an IPv4-mapped
// IPv6 address counts as the IPv4 one).
std::string client_of(const sockaddr* addr) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (!addr) { return buf; }
  if (addr->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, buf, sizeof buf);
  } else if (addr->sa_family == AF_INET6) {
    const auto* a6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
      ::inet_ntop(AF_INET, &a6->sin6_addr.s6_addr[12], buf, sizeof buf);
    } else {
      ::inet_ntop(AF_INET6, &a6->sin6_addr, buf, sizeof buf);
    }
  }
  return buf;
}

// One HTTP request as it arrives: made when its request line is read (the URI log callback), then
// libmicrohttpd calls the handler once for the head, once per body chunk, once at the end.
struct RequestState {
  TargetSeen target;
  bool head_checked = false;
  std::string body;
  bool too_large = false;
};

MHD_Result send(MHD_Connection* c, const Response& r) {
  MHD_Response* m =
      MHD_create_response_from_buffer(r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (!m) { return MHD_NO; }
  if (!r.content_type.empty()) { MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str()); }
  for (const auto& [k, v] : r.headers) { MHD_add_response_header(m, k.c_str(), v.c_str()); }
  const MHD_Result ret = MHD_queue_response(c, static_cast<unsigned>(r.status), m);
  MHD_destroy_response(m);
  return ret;
}

MHD_Result collect_header(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* req = static_cast<Request*>(cls);
  std::string k = key ? key : "";
  for (auto& ch : k) { ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch))); }
  auto [it, fresh] = req->headers.emplace(k, value ? value : "");
  if (!fresh) { it->second += std::string(", ") + (value ? value : ""); }
  ++req->header_count;
  return MHD_YES;
}

// The listening socket's own word on its family: the HTTP process is handed the socket, not the address.
int socket_family(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 ? ss.ss_family : AF_UNSPEC;
}

std::uint64_t connection_id(MHD_Connection* c) {
  const auto* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info && info->socket_context ? reinterpret_cast<std::uintptr_t>(info->socket_context) : 0;
}
}  // namespace

struct ApiServer::Impl {
  Handler handler;
  ServerOptions opt;
  ConnectionGuard guard;
  std::atomic<std::size_t> max_body;  // read by the event loops, changed by a reload
  int listen_fd = -1;                 // ours until a libmicrohttpd daemon takes it over
  bool tls = false;
  mutable std::mutex daemon_mu;  // the current daemon, swapped on a certificate reload
  MHD_Daemon* daemon = nullptr;
  std::mutex error_mu;
  std::string last_error;  // libmicrohttpd's last message, for a start that fails

  Impl(int listen_socket, Handler h, ServerOptions o)
      : handler(std::move(h)),
        opt(std::move(o)),
        guard(
            guard_limits(opt), [this](const std::string& m) { log(engine::LogLevel::warning, m); },
            [](int fd) { ::shutdown(fd, SHUT_RDWR); }),
        max_body(opt.max_body),
        listen_fd(listen_socket),
        tls(opt.tls != nullptr) {}

  static ConnectionGuard::Limits guard_limits(const ServerOptions& o) {
    return {o.max_connections,     o.max_connections_per_client, o.request_timeout,
            o.max_connection_time, std::chrono::seconds(10),     std::chrono::milliseconds(250)};
  }

  // Hands the listening socket to a new libmicrohttpd daemon built from opt (daemon_mu held): it
  // listens on a duplicate while the old one still accepts, so no connection attempt is refused;
  // then the old one stops accepting and goes. A failed start leaves the old one as it was.
  bool swap_daemon(const tls::PemIdentity* pem, std::string* why) {
    const int fd = ::fcntl(listen_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
      if (why) { *why = std::string("cannot duplicate the listening socket: ") + std::strerror(errno); }
      return false;
    }
    std::string problem_text;
    MHD_Daemon* fresh = start_daemon(fd, pem, &problem_text);
    if (!fresh) {
      if (why) { *why = problem_text; }
      return false;
    }
    MHD_Daemon* old = daemon;
    const MHD_socket old_fd = MHD_quiesce_daemon(old);  // it no longer accepts, nor owns the socket
    daemon = fresh;
    listen_fd = fd;
    MHD_stop_daemon(old);
    if (old_fd != MHD_INVALID_SOCKET) { ::close(old_fd); }
    return true;
  }

  void log(engine::LogLevel level, const std::string& m) {
    if (opt.log) { opt.log({level, m, "", "http", ""}); }
  }

  // ---- libmicrohttpd callbacks (cls is this Impl) ----
  static MHD_Result on_accept(void* cls, const sockaddr* addr, socklen_t) {
    return static_cast<Impl*>(cls)->guard.admit(client_of(addr)) ? MHD_YES : MHD_NO;
  }

  static void on_connection(void* cls, MHD_Connection* c, void** socket_context, MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<Impl*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      // Each answer is read before the next query: libmicrohttpd 1.0 returns every answer in the
      // same per-connection union, so a second query overwrites the first (0.9.75 pointed into the
      // connection itself). Read the other way round, the fd was the address's pointer bits and the
      // guard cut a descriptor that was not this connection's.
      const auto* fd_info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
      const int fd = fd_info ? fd_info->connect_fd : -1;
      const auto* addr_info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
      const std::string client = client_of(addr_info ? addr_info->client_addr : nullptr);
      const std::uint64_t id = self->guard.opened(fd, client);
      *socket_context = reinterpret_cast<void*>(static_cast<std::uintptr_t>(id));
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      self->guard.closed(reinterpret_cast<std::uintptr_t>(*socket_context));
      *socket_context = nullptr;
    }
  }

  static void on_completed(void* cls, MHD_Connection* c, void** con_cls, MHD_RequestTerminationCode) {
    delete static_cast<RequestState*>(*con_cls);
    *con_cls = nullptr;
    static_cast<Impl*>(cls)->guard.response_done(connection_id(c));
  }

  static void on_log(void* cls, const char* fmt, va_list ap) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    std::string m(buf);
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) { m.pop_back(); }
    auto* self = static_cast<Impl*>(cls);
    {
      std::lock_guard lk(self->error_mu);
      self->last_error = m;
    }
    // Per-connection noise (a client that hung up, a handshake that never finished) is what a
    // flood produces by the thousand: debug only; what the guard sheds is logged, summed.
    self->log(engine::LogLevel::debug, "libmicrohttpd: " + m);
  }

  // Its return value is the request's con_cls in on_request.
  static void* on_request_line(void*, const char* uri, MHD_Connection*) {
    auto* st = new RequestState;
    if (uri) { st->target = TargetSeen{uri, uri}; }
    return st;
  }

  // The head is complete: refused (and the connection closed, its framing is not to be trusted), too
  // large a body announced, or on to read the body.
  MHD_Result on_head(MHD_Connection* c, const char* method, const char* version, const RequestState& st) {
    if (auto refusal = refuse_received_head(c, method, version, st.target)) {
      guard.request_complete(connection_id(c));  // answered now; the body is not read
      Response r = problem(refusal->status, refusal->detail);
      r.headers.emplace_back("Connection", "close");
      return send(c, r);
    }
    const char* length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && std::strtoull(length, nullptr, 10) > max_body.load()) {
      guard.request_complete(connection_id(c));
      return send(c, problem(413, "the request body is larger than the daemon accepts"));
    }
    return MHD_YES;
  }

  static MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method, const char* version,
                               const char* upload_data, std::size_t* upload_size, void** con_cls) {
    auto* self = static_cast<Impl*>(cls);
    auto* st = static_cast<RequestState*>(*con_cls);
    if (!st) {
      *con_cls = st = new RequestState;  // on_request_line makes it; never trust that alone
    }
    if (!st->head_checked) {
      st->head_checked = true;
      return self->on_head(c, method, version, *st);
    }
    if (*upload_size) {
      if (st->body.size() + *upload_size > self->max_body.load()) {
        st->too_large = true;
      } else if (!st->too_large) {
        st->body.append(upload_data, *upload_size);
      }
      *upload_size = 0;
      return MHD_YES;
    }
    self->guard.request_complete(connection_id(c));
    if (st->too_large) { return send(c, problem(413, "the request body is larger than the daemon accepts")); }
    Request req;
    req.method = method ? method : "";
    req.path = url ? url : "";
    req.body = std::move(st->body);
    MHD_get_connection_values(c, MHD_HEADER_KIND, &collect_header, &req);
    try {
      return send(c, self->handler(req));
    } catch (const std::exception& e) {
      // The text stays in the journal: it may name paths or values a client has no business seeing.
      self->log(engine::LogLevel::error,
                std::string("internal error answering ") + req.method + " " + req.path + ": " + e.what());
      return send(c, problem(500, "internal error (the daemon's log says what)"));
    }
  }

  // A libmicrohttpd daemon on listening socket `fd` (a duplicate of the running one's during a
  // reload). It owns fd once started; on failure fd is left alone (libmicrohttpd may have closed it).
  MHD_Daemon* start_daemon(int fd, const tls::PemIdentity* pem, std::string* why) {
    // epoll for plain HTTP. With TLS, libmicrohttpd 0.9.75's epoll loop spins (recv EAGAIN, then
    // epoll_wait with a zero timeout, over and over) while a handshake waits for the client,
    // taking the CPU the client needs; its poll loop waits properly (measured: docs/benchmarks.md, "The API under a
    // flood and under load").
    unsigned flags =
        (pem ? MHD_USE_POLL_INTERNAL_THREAD : MHD_USE_EPOLL_INTERNAL_THREAD) | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (pem) { flags |= MHD_USE_TLS; }
    if (socket_family(fd) == AF_INET6) { flags |= MHD_USE_IPv6; }
    const auto secs = [](std::chrono::milliseconds d) {
      return static_cast<intptr_t>(std::max<long long>(1, (d.count() + 999) / 1000));
    };
    const auto threads = static_cast<std::size_t>(std::max(1, opt.threads));
    std::vector<MHD_OptionItem> o = {
        {MHD_OPTION_LISTEN_SOCKET, fd, nullptr},
        // Backstops: the guard sheds first (counting why); these hold if it is raced.
        {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(opt.max_connections + threads), nullptr},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<intptr_t>(opt.max_connections_per_client + threads), nullptr},
        {MHD_OPTION_CONNECTION_TIMEOUT, secs(opt.idle_timeout), nullptr},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 32 * 1024, nullptr},
        {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&on_connection), this},
        {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&on_completed), this},
        {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&on_log), this},
        {MHD_OPTION_URI_LOG_CALLBACK, reinterpret_cast<intptr_t>(&on_request_line), this},
    };
    if (threads > 1) { o.push_back({MHD_OPTION_THREAD_POOL_SIZE, static_cast<intptr_t>(threads), nullptr}); }
    if (pem) {
      o.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(pem->chain.c_str())});
      o.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(pem->key.c_str())});
      o.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(tls::kGnutlsPriorities)});
    }
    o.push_back({MHD_OPTION_END, 0, nullptr});
    {
      std::lock_guard lk(error_mu);
      last_error.clear();
    }
    MHD_Daemon* d =
        MHD_start_daemon(flags, 0, &on_accept, this, &on_request, this, MHD_OPTION_ARRAY, o.data(), MHD_OPTION_END);
    if (!d && why) {
      std::lock_guard lk(error_mu);
      *why = "libmicrohttpd did not start" + (last_error.empty() ? std::string() : ": " + last_error);
    }
    return d;
  }
};

ApiServer::ApiServer(int listen_fd, Handler handler, ServerOptions options)
    : impl_(std::make_unique<Impl>(listen_fd, std::move(handler), std::move(options))) {}

ApiServer::~ApiServer() { stop(); }

Result<Listener> bind_listener(const engine::ListenAddress& l) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(l.port);
  if (int rc = ::getaddrinfo(l.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Error{"cannot listen on " + l.display() + ": " + ::gai_strerror(rc)};
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, found->ai_protocol);
  if (fd < 0) { return Error{"cannot listen on " + l.display() + ": " + std::strerror(errno), errno}; }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (found->ai_family == AF_INET6) { ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one); }
  // Connections that send nothing wait in the kernel for their first bytes (10 s), not in the server.
  const int defer_s = 10;
  ::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof defer_s);
  if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 512) != 0) {
    const int e = errno;
    ::close(fd);
    return Error{"cannot listen on " + l.display() + ": " + std::strerror(e), e};
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  const int bound = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                                   : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return Listener{fd, bound};
}

Status ApiServer::start() {
  if (impl_->listen_fd < 0) { return Error{"the API server is not bound"}; }
  std::lock_guard lk(impl_->daemon_mu);
  if (impl_->daemon) { return Status::success(); }
  std::string why;
  impl_->guard.start();
  impl_->daemon = impl_->start_daemon(impl_->listen_fd, impl_->opt.tls.get(), &why);
  if (!impl_->daemon) {
    impl_->listen_fd = -1;  // libmicrohttpd may have closed it; the process is about to exit
    impl_->guard.stop();
    return Error{why};
  }
  return Status::success();
}

void ApiServer::stop() {
  if (!impl_) { return; }
  MHD_Daemon* d = nullptr;
  {
    std::lock_guard lk(impl_->daemon_mu);
    d = impl_->daemon;
    impl_->daemon = nullptr;
  }
  if (d) {
    MHD_stop_daemon(d);  // closes its connections and the listening socket
    impl_->listen_fd = -1;
  } else if (impl_->listen_fd >= 0) {
    ::close(impl_->listen_fd);
    impl_->listen_fd = -1;
  }
  impl_->guard.stop();
}

bool ApiServer::set_tls_identity(std::shared_ptr<const tls::PemIdentity> identity, std::string* why) {
  if (!impl_->tls || !identity) {
    if (why) { *why = "the server speaks plain HTTP; turning TLS on takes a restart"; }
    return false;
  }
  std::lock_guard lk(impl_->daemon_mu);
  if (!impl_->daemon) { return false; }
  if (!impl_->swap_daemon(identity.get(), why)) { return false; }
  impl_->opt.tls = std::move(identity);
  return true;
}

bool ApiServer::set_limits(const ServerOptions& fresh, std::string* why) {
  auto& o = impl_->opt;
  impl_->max_body = fresh.max_body;
  impl_->guard.set_limits(Impl::guard_limits(fresh));
  const bool daemon_level = fresh.threads != o.threads || fresh.idle_timeout != o.idle_timeout ||
                            fresh.max_connections != o.max_connections ||
                            fresh.max_connections_per_client != o.max_connections_per_client;
  const ServerOptions before = o;
  o.max_body = fresh.max_body;
  o.max_headers = fresh.max_headers;
  o.request_timeout = fresh.request_timeout;
  o.max_connection_time = fresh.max_connection_time;
  o.threads = fresh.threads;
  o.idle_timeout = fresh.idle_timeout;
  o.max_connections = fresh.max_connections;
  o.max_connections_per_client = fresh.max_connections_per_client;
  if (!daemon_level) { return true; }
  std::lock_guard lk(impl_->daemon_mu);
  if (!impl_->daemon) {
    return true;  // not started yet: start() uses the new options
  }
  if (impl_->swap_daemon(o.tls.get(), why)) { return true; }
  // The old server goes on with its own options: put back those of them a new one would read.
  o.threads = before.threads;
  o.idle_timeout = before.idle_timeout;
  o.max_connections = before.max_connections;
  o.max_connections_per_client = before.max_connections_per_client;
  return false;
}

bool ApiServer::serves_tls() const { return impl_->tls; }

std::string ApiServer::connection_metrics() const { return impl_->guard.metrics_text(); }

}  // namespace p2pnode::http
