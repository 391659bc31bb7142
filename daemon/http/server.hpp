#pragma once
// The HTTP(S) server of the REST API and /metrics: libmicrohttpd, event-driven (epoll; `threads`
// event loops, each serving many connections, so an idle or slow client holds no thread), with the
// limits of ConnectionGuard applied at accept and by deadline. What it answers is a Handler's: the
// daemon's routes (http/router.hpp) reached through privsep/, since this runs without root.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/config.hpp"
#include "engine/log.hpp"
#include "http/router.hpp"
#include "tls/pem.hpp"

namespace p2pnode::http {

struct ServerOptions {
  engine::ListenAddress listen;
  int threads = 2;  // event loops (epoll), each serving any number of connections
  std::size_t max_body = 64 * 1024;
  std::size_t max_headers = 64;
  std::size_t max_connections = 256;                                   // in all; more are closed at accept
  std::size_t max_connections_per_client = 32;                         // from one address; more are closed at accept
  std::chrono::milliseconds request_timeout{std::chrono::seconds(5)};  // a whole request must arrive this fast
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(10)};    // no byte in either direction for this long
  std::chrono::milliseconds max_connection_time{std::chrono::seconds(60)};  // then shut down
  std::shared_ptr<const tls::PemIdentity> tls;  // set: HTTPS only (TLS 1.2 or later); null: plain HTTP
  std::vector<std::string> server_names;        // Host names answered besides addresses and localhost
  engine::LogFn log;                            // what the server sheds, summed; libmicrohttpd's errors
};

// The token from a root-only file: an error when missing, empty, or readable by group/others.
Result<std::string> read_token_file(const std::filesystem::path& host_path);

// What answers a request (may be called on any event loop's thread at once).
using Handler = std::function<Response(const Request&)>;

struct Listener {
  int fd = -1;   // listening, non-blocking, close-on-exec
  int port = 0;  // the bound port (the one asked for, or the kernel's choice for port 0)
};
// Binds and listens on `address` (port 0: any free port).
Result<Listener> bind_listener(const engine::ListenAddress& address);

class ApiServer {
 public:
  // Takes over `listen_fd` (from bind_listener).
  ApiServer(int listen_fd, Handler handler, ServerOptions options);
  ~ApiServer();
  // Serves on libmicrohttpd's threads; an error when it cannot start (a bad TLS identity).
  Status start();
  void stop();
  // Serve new connections with another certificate and key (SIGHUP): a new server takes over the
  // listening socket, the old one stops (closing the connections it had). False, with the reason
  // in *why, when serving plain HTTP (only a restart changes that) or the new server cannot start
  // (the old one then keeps serving).
  bool set_tls_identity(std::shared_ptr<const tls::PemIdentity> identity, std::string* why = nullptr);
  bool serves_tls() const;
  // The HTTP limits of `fresh` (SIGHUP; its listen address and TLS identity are not looked at):
  // body size and the guard's limits apply at once; a change of threads, idle timeout or the
  // connection limits starts a new server on the same socket (as a certificate reload does). False,
  // with the reason in *why, when that server cannot start: the old limits then stay.
  bool set_limits(const ServerOptions& fresh, std::string* why = nullptr);
  // The server's own counters (what it shed), in the Prometheus text format, for /metrics.
  std::string connection_metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace p2pnode::http
