#include "http/router.hpp"

#include "core/json_text.hpp"
#include "http/host_check.hpp"
#include "http/request_head.hpp"

#include "engine/metrics.hpp"

namespace p2pnode::http {
namespace {
using json = nlohmann::json;
constexpr const char* kJson = "application/json";

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
    case 421: return "Misdirected Request";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

const std::map<std::string, std::string>& known_paths() {  // path -> Allow
  static const std::map<std::string, std::string> m = {
      {"/livez", "GET, HEAD"},       {"/readyz", "GET, HEAD"},      {"/metrics", "GET, HEAD"},
      {"/v1/status", "GET, HEAD"},   {"/v1/findings", "GET, HEAD"}, {"/v1/devices", "GET, HEAD"},
      {"/v1/topology", "GET, HEAD"}, {"/v1/plan", "GET, HEAD"},     {"/v1/selftest", "GET, HEAD, POST"},
      {"/v1/reconcile", "POST"},     {"/v1/health", "GET, HEAD"}};
  return m;
}

std::string header(const Request& r, const std::string& lower_name) {
  auto it = r.headers.find(lower_name);
  return it == r.headers.end() ? std::string() : it->second;
}

Response ok(std::string body, const char* type) { return Response{200, type, std::move(body), {}}; }
}  // namespace

Response problem(int status, const std::string& detail, json extra) {
  json j = {{"type", "about:blank"}, {"title", reason_phrase(status)}, {"status", status}, {"detail", detail}};
  for (auto& [k, v] : extra.items()) { j[k] = v; }
  return Response{status, "application/problem+json", json_text(j), {}};
}

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

void Router::set_token(std::string token, std::string problem_text) {
  std::lock_guard lk(token_mu_);
  token_ = std::move(token);
  token_problem_ = std::move(problem_text);
}

bool Router::authorized(const Request& req, Response& denied) {
  std::string t, why;
  {
    std::lock_guard lk(token_mu_);
    t = token_;
    why = token_problem_;
  }
  if (t.empty()) {
    denied = problem(503, "mutating endpoints are disabled: " + why);
    return false;
  }
  const std::string h = header(req, "authorization");
  static constexpr std::string_view kBearer = "Bearer ";
  if (h.size() <= kBearer.size() || h.compare(0, kBearer.size(), kBearer) != 0) {
    denied =
        problem(401, "this endpoint needs 'Authorization: Bearer <token>' (the token is in the daemon's token_file)");
    denied.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"p2pnode\"");
    return false;
  }
  // The whole value against the whole expected one: nothing after the token passes unread.
  if (!token_equal(h, std::string(kBearer) + t)) {
    denied = problem(401, "the bearer token is not valid");
    denied.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"p2pnode\", error=\"invalid_token\"");
    return false;
  }
  return true;
}

Response Router::post(const Request& req, bool selftest) {
  Response denied;
  if (!authorized(req, denied)) { return denied; }
  // POST /v1/selftest {"force": true}: run even while other processes use the GPUs.
  bool force = false;
  if (selftest && req.body.find_first_not_of(" \t\r\n") != std::string::npos) {
    const json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return problem(400, "the body must be a JSON object such as {\"force\": true}, or empty");
    }
    for (const auto& [k, v] : body.items()) {
      if (k != "force") {
        return problem(400, "unknown field '" + k + "' in the body; the only one is force (a boolean)");
      }
    }
    if (auto f = body.find("force"); f != body.end()) {
      if (!f->is_boolean()) { return problem(400, "force: expected true or false"); }
      force = f->get<bool>();
    }
  }
  const auto r = engine_.request(selftest ? "api-selftest" : "api", selftest, force);
  json out{{"accepted", true}, {"request", engine::to_string(r)}, {"selftest", selftest}};
  if (selftest) { out["force"] = force; }
  return Response{202, kJson, json_text(out), {}};
}

void Router::set_server_names(std::vector<std::string> names) {
  std::lock_guard lock(token_mu_);
  server_names_ = std::move(names);
}

Response Router::handle(const Request& req) {
  if (const std::size_t most = max_headers_; req.header_count > most) {
    return problem(431, "more than " + std::to_string(most) + " header fields");
  }
  // The HTTP process refuses these already; the daemon does not rely on it.
  for (const auto& [name, value] : req.headers) {
    if (has_control_character(value)) {
      return problem(400, "the header field " + name + " holds a control character (RFC 9110 §5.5)");
    }
  }
  {
    const auto host = req.headers.find("host");
    std::lock_guard lock(token_mu_);
    if (!host_allowed(host == req.headers.end() ? "" : host->second, host != req.headers.end(), server_names_)) {
      return problem(421,
                     "the Host header names neither an address, localhost nor one of this daemon's names "
                     "(http.server_names in the configuration)");
    }
  }
  const bool get = req.method == "GET" || req.method == "HEAD";
  const auto& p = req.path;
  if (get) {
    if (p == "/livez") { return ok(R"({"status":"alive"})", kJson); }
    auto snap = engine_.snapshot();
    if (p == "/readyz") {
      if (snap->ready) { return ok(snap->readyz, kJson); }
      const auto& st = snap->state;
      auto reasons = st.reasons;
      reasons.insert(reasons.end(), snap->health_holds.begin(), snap->health_holds.end());
      const std::string title = st.state == engine::NodeState::ready
                                    ? "the node is not P2P-ready: the driver asks to drain P2P on a GPU"
                                    : std::string("the node is ") + engine::to_string(st.state);
      return problem(503, title, {{"state", engine::to_string(st.state)}, {"ready", false}, {"reasons", reasons}});
    }
    if (p == "/metrics") {
      return ok(snap->metrics + (metrics_extra_ ? metrics_extra_() : std::string()), engine::kMetricsContentType);
    }
    if (p == "/v1/status") { return ok(snap->status, kJson); }
    if (p == "/v1/findings") {
      const std::string accept = header(req, "accept");
      if (accept.find("text/plain") != std::string::npos && accept.find("json") == std::string::npos) {
        return ok(snap->findings_table, "text/plain; charset=utf-8");
      }
      return ok(snap->findings, kJson);
    }
    if (p == "/v1/devices") { return ok(snap->devices, kJson); }
    if (p == "/v1/topology") { return ok(snap->topology, kJson); }
    if (p == "/v1/plan") { return ok(snap->plan, kJson); }
    if (p == "/v1/selftest") { return ok(snap->selftest, kJson); }
    if (p == "/v1/health") { return ok(snap->health, kJson); }
  } else if (req.method == "POST" && (p == "/v1/reconcile" || p == "/v1/selftest")) {
    return post(req, p == "/v1/selftest");  // these take no body; whatever came is ignored
  }
  auto it = known_paths().find(p);
  if (it == known_paths().end()) { return problem(404, "no such endpoint; see api/openapi.yaml"); }
  Response r = problem(405, req.method + " is not allowed on " + p + "; allowed: " + it->second);
  r.headers.emplace_back("Allow", it->second);
  return r;
}

}  // namespace p2pnode::http
