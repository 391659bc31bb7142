#pragma once
// The REST API and /metrics as a table: a parsed request in, a response out. It knows nothing of
// sockets or the HTTP library (http/server.cpp speaks HTTP), so every route is a plain function
// of the published Snapshot and is tested without a server. GET handlers only copy a Snapshot;
// POST handlers need the bearer token and only queue work for the engine.
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.hpp"

namespace p2pnode::http {

struct Request {
  std::string method;                          // GET, HEAD, POST, …
  std::string path;                            // without the query
  std::map<std::string, std::string> headers;  // names lower-cased
  std::size_t header_count = 0;                // as sent (repeated names count each time)
  std::string body;
};

struct Response {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Content-Type
};

// An RFC 9457 problem document.
Response problem(int status, const std::string& detail, nlohmann::json extra = nlohmann::json::object());

// Constant-time comparison (the time depends on the lengths only).
bool token_equal(std::string_view a, std::string_view b);

class Router {
 public:
  Router(engine::Engine& engine, std::size_t max_headers) : engine_(engine), max_headers_(max_headers) {}
  Response handle(const Request& req);
  // Swap the token (SIGHUP); empty: POST endpoints answer 503 with `problem` until one is set.
  void set_token(std::string token, std::string problem);
  // Appended to every /metrics body: the server's own counters (live, not from the snapshot).
  void set_metrics_extra(std::function<std::string()> f) { metrics_extra_ = std::move(f); }
  void set_max_headers(std::size_t n) { max_headers_ = n; }  // SIGHUP
  // The names a Host header may give besides addresses and localhost (http/host_check.hpp);
  // any other Host is answered 421.
  void set_server_names(std::vector<std::string> names);

 private:
  Response post(const Request& req, bool selftest);
  bool authorized(const Request& req, Response& denied);
  engine::Engine& engine_;
  std::atomic<std::size_t> max_headers_;
  std::function<std::string()> metrics_extra_;
  std::mutex token_mu_;
  std::string token_, token_problem_ = "no token file was read";
  std::vector<std::string> server_names_;  // under token_mu_
};

}  // namespace p2pnode::http
