#pragma once
// One cpp-httplib server for the REST API and /metrics, plain HTTP or HTTPS. GET handlers only
// copy a published Snapshot; POST handlers need the bearer token and only queue work for the engine.
#include <memory>
#include <string>
#include <thread>

#include "engine/engine.hpp"
#include "tls/identity.hpp"

namespace httplib {
class Server;
}

namespace p2pnode::http {

struct ServerOptions {
  engine::ListenAddress listen;
  int threads = 8;                 // fixed worker pool; connections beyond it wait in a bounded queue
  std::size_t queue = 64;          // accepted connections waiting for a worker; accept blocks beyond
  std::size_t max_body = 64 * 1024;
  std::size_t max_headers = 64;
  int read_timeout_s = 3, write_timeout_s = 5;  // per read/write; a client that sends nothing is gone in 3 s
  int keep_alive_timeout_s = 2;
  std::size_t keep_alive_max = 100;
  std::chrono::milliseconds max_connection_time{std::chrono::seconds(60)};  // then shut down (slow clients)
  std::shared_ptr<const tls::Identity> tls;  // set: HTTPS only (TLS 1.2 or later); null: plain HTTP
};

// Constant-time comparison (the time depends on the lengths only).
bool token_equal(std::string_view a, std::string_view b);
// The token from a root-only file: an error when missing, empty, or readable by group/others.
Result<std::string> read_token_file(const std::filesystem::path& host_path);

class ApiServer {
 public:
  ApiServer(engine::Engine& engine, ServerOptions options);
  ~ApiServer();
  // Binds (port 0: any free port); returns the bound port or an error.
  Result<int> bind();
  void start();  // serves on a thread
  void stop();
  // Serve new connections with another certificate and key (SIGHUP); false when serving plain
  // HTTP, which only a restart changes.
  bool set_tls_identity(std::shared_ptr<const tls::Identity> identity);
  bool serves_tls() const;
  // Swap the token (SIGHUP); empty: POST endpoints answer 503 until a token is configured.
  void set_token(std::string token, std::string problem);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace p2pnode::http
