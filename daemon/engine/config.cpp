#include "engine/config.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "engine/health_limits_config.hpp"

namespace p2pnode::engine {

using profile::MapReader;

std::string ListenAddress::display() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// Decided on the parsed address, never the text: a name ("localhost", "127.x.example") is resolved
// when the server binds and may be anything then, so only an address literal counts.
bool ListenAddress::is_loopback() const {
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) { return (ntohl(v4.s_addr) >> 24) == 127; }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) != 1) { return false; }
  if (IN6_IS_ADDR_LOOPBACK(&v6)) { return true; }
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

std::optional<ListenAddress> parse_listen(std::string_view text, std::string* why) {
  auto fail = [&](std::string m) -> std::optional<ListenAddress> {
    if (why) { *why = std::move(m); }
    return std::nullopt;
  };
  ListenAddress a;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return fail("expected [IPv6]:PORT");
    }
    a.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) { return fail("expected HOST:PORT, e.g. 127.0.0.1:9470"); }
    a.host = std::string(text.substr(0, colon));
    if (a.host.find(':') != std::string::npos) { return fail("an IPv6 address goes in brackets: [::1]:9470"); }
    port = text.substr(colon + 1);
  }
  int p = -1;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (ec != std::errc() || ptr != port.data() + port.size() || p < 0 || p > 65535) {
    return fail("the port must be a number from 0 to 65535, found '" + std::string(port) + "'");
  }
  if (a.host.empty() || a.host.find_first_of(" /\t") != std::string::npos) {
    return fail("the host is empty or has spaces");
  }
  a.port = p;
  return a;
}

namespace {
bool only_comments(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto eol = std::min(text.find('\n', i), text.size());
    const auto line = text.substr(i, eol - i);
    const auto first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && line[first] != '#') { return false; }
    i = eol + 1;
  }
  return true;
}

bool absolute_path(MapReader& m, std::string_view key, std::string& out) {
  if (auto v = m.string(key)) {
    if (v->empty() || v->front() != '/') {
      m.diag().add(m.get(key), m.child_path(key), "expected an absolute path, found '" + *v + "'");
    } else {
      out = *v;
      return true;
    }
  }
  return false;
}

// 1-based line and column of a key's value, as Diagnostics counts them.
void place(const YAML::Node& n, int& line, int& column) {
  const YAML::Mark m = n.IsDefined() ? n.Mark() : YAML::Mark::null_mark();
  line = m.line >= 0 ? m.line + 1 : 0;
  column = m.column >= 0 ? m.column + 1 : 0;
}

// A duration field of `m` between lo and hi ("expected <range>" otherwise) into dest.
void duration_within(MapReader& m, const char* key, std::chrono::milliseconds lo, std::chrono::milliseconds hi,
                     const char* range, std::chrono::milliseconds& dest) {
  if (auto v = m.duration(key)) {
    if (*v < lo || *v > hi) {
      m.diag().add(m.get(key), m.child_path(key), std::string("expected ") + range);
    } else {
      dest = std::chrono::duration_cast<std::chrono::milliseconds>(*v);
    }
  }
}

void read_tls(MapReader& root, DaemonConfig& c) {
  auto t = root.map("tls", {"cert_file", "key_file"});
  if (!t) { return; }
  TlsFiles f;
  const bool cert = absolute_path(*t, "cert_file", f.cert_file);
  const bool key = absolute_path(*t, "key_file", f.key_file);
  if (!t->has("cert_file") || !t->has("key_file")) {
    const char* missing = !t->has("cert_file") && !t->has("key_file") ? "cert_file and key_file"
                          : !t->has("cert_file")                      ? "cert_file"
                                                                      : "key_file";
    t->diag().add(t->node(), "tls",
                  std::string("expected both cert_file and key_file (PEM files), missing ") + missing +
                      "; leave tls out to serve plain HTTP");
    return;
  }
  if (!cert || !key) { return; }
  if (f.cert_file == f.key_file) {
    t->diag().add(t->get("key_file"), t->child_path("key_file"),
                  "expected a file apart from cert_file: the key must be 0600, the certificate need not be");
  }
  place(t->get("cert_file"), f.cert_line, f.cert_column);
  place(t->get("key_file"), f.key_line, f.key_column);
  c.tls = std::move(f);
}

void read_health(MapReader& root, DaemonConfig& c) {
  auto h =
      root.map("health", {"enabled", "interval", "window", "agent_time_limit", "nvlink", "nvlink_interval", "limits"});
  if (!h) { return; }
  if (auto v = h->boolean("enabled")) { c.health.enabled = *v; }
  if (auto v = h->boolean("nvlink")) { c.health.nvlink = *v; }
  duration_within(*h, "interval", std::chrono::seconds(1), std::chrono::hours(1), "1s to 1h", c.health.interval);
  duration_within(*h, "window", std::chrono::seconds(10), std::chrono::hours(24 * 7), "10s to 7d", c.health.window);
  duration_within(*h, "agent_time_limit", std::chrono::milliseconds(500), std::chrono::minutes(1), "500ms to 1m",
                  c.health.agent_time_limit);
  duration_within(*h, "nvlink_interval", std::chrono::seconds(1), std::chrono::hours(1), "1s to 1h",
                  c.health.nvlink_interval);
  if (c.health.window < c.health.interval && h->has("window")) {
    h->diag().add(h->get("window"), h->child_path("window"),
                  "expected at least the interval: a rise is seen by comparing two passes within the window");
  }
  read_health_limits(*h, c.health.limits);
}

// apiVersion and kind, where given, must name this format.
void read_config_kind(MapReader& root, profile::Diagnostics& diag) {
  if (auto v = root.string("apiVersion"); v && *v != "p2pnode/v1") {
    diag.add(root.get("apiVersion"), "apiVersion", "expected 'p2pnode/v1', found '" + *v + "'");
  }
  if (auto v = root.string("kind"); v && *v != "DaemonConfig") {
    diag.add(root.get("kind"), "kind", "expected 'DaemonConfig', found '" + *v + "'");
  }
}

// listen, and the leave to listen beyond loopback (read first: it decides whether listen is valid).
void read_config_listen(MapReader& root, profile::Diagnostics& diag, DaemonConfig& c) {
  if (auto v = root.boolean("allow_non_loopback")) { c.allow_non_loopback = *v; }
  if (auto v = root.boolean("allow_plaintext_beyond_loopback")) { c.allow_plaintext_beyond_loopback = *v; }
  if (auto v = root.string("listen")) {
    std::string why;
    if (auto a = parse_listen(*v, &why)) {
      c.listen = *a;
    } else {
      diag.add(root.get("listen"), "listen", why);
    }
    if (!c.listen.is_loopback() && !c.allow_non_loopback) {
      diag.add(root.get("listen"), "listen",
               "'" + *v +
                   "' is not a loopback address (127.0.0.0/8 or ::1 written as an address; a name is "
                   "not taken as loopback); set allow_non_loopback: true to listen beyond this host");
    }
  }
}

void read_config_agent(MapReader& root, DaemonConfig& c) {
  if (auto a = root.map("agent", {"path", "args"})) {
    absolute_path(*a, "path", c.agent_path);
    c.agent_args = a->string_list("args");
  }
}

void read_config_reconcile(MapReader& root, DaemonConfig& c) {
  if (auto r = root.map("reconcile", {"time_limit"})) {
    if (auto v = r->duration("time_limit")) {
      if (*v < std::chrono::seconds(1)) {
        r->diag().add(r->get("time_limit"), r->child_path("time_limit"), "expected at least 1s");
      } else {
        c.reconcile_time_limit = std::chrono::duration_cast<std::chrono::milliseconds>(*v);
      }
    }
  }
}

void read_config_selftest(MapReader& root, DaemonConfig& c) {
  if (auto s = root.map("selftest", {"schedule", "time_limit", "on_start"})) {
    if (auto v = s->duration("schedule")) {
      if (*v < std::chrono::minutes(1)) {
        s->diag().add(s->get("schedule"), s->child_path("schedule"), "expected at least 1m between self-tests");
      } else {
        c.selftest_schedule = *v;
      }
    }
    if (auto v = s->duration("time_limit")) {
      if (v->count() <= 0) {
        s->diag().add(s->get("time_limit"), s->child_path("time_limit"), "expected a duration above zero");
      } else {
        c.selftest_time_limit = *v;
      }
    }
    if (auto v = s->boolean("on_start")) { c.selftest_on_start = *v; }
  }
}

void read_config_metrics(MapReader& root, DaemonConfig& c) {
  if (auto m = root.map("metrics", {"detail"})) {
    if (auto v = m->string("detail")) {
      if (*v == "full") {
        c.metrics_full_detail = true;
      } else if (*v != "compact") {
        m->diag().add(m->get("detail"), m->child_path("detail"), "expected 'compact' or 'full', found '" + *v + "'");
      }
    }
  }
}

// http.server_names: DNS names, with at most a leading "*." wildcard.
void read_config_server_names(MapReader& h, DaemonConfig& c) {
  c.http_server_names = h.string_list("server_names");
  for (std::size_t i = 0; i < c.http_server_names.size(); ++i) {
    const auto& n = c.http_server_names[i];
    const bool ok =
        !n.empty() && n.size() <= 253 && n.front() != '-' && n.front() != '.' &&
        n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*") == std::string::npos &&
        (n.find('*') == std::string::npos || (n.rfind("*.", 0) == 0 && n.find('*', 1) == std::string::npos));
    if (!ok) {
      h.diag().add(h.get("server_names")[i], h.child_path("server_names") + "[" + std::to_string(i) + "]",
                   "expected a DNS name such as node1.example.org or *.example.org, found '" + n + "'");
    }
  }
}

void read_config_http(MapReader& root, DaemonConfig& c) {
  auto h = root.map("http", {"threads", "max_body", "max_connection_time", "max_connections",
                             "max_connections_per_client", "request_timeout", "idle_timeout", "server_names"});
  if (!h) { return; }
  read_config_server_names(*h, c);
  if (auto v = h->integer("threads", 1, 64)) { c.http_threads = static_cast<int>(*v); }
  if (auto v = h->size("max_body")) {
    if (*v < 1024 || *v > (16u << 20)) {
      h->diag().add(h->get("max_body"), h->child_path("max_body"), "expected 1KiB to 16MiB");
    } else {
      c.http_max_body = *v;
    }
  }
  duration_within(*h, "max_connection_time", std::chrono::seconds(5), std::chrono::hours(1), "5s to 1h",
                  c.http_max_connection_time);
  if (auto v = h->integer("max_connections", 16, 100000)) { c.http_max_connections = static_cast<std::uint64_t>(*v); }
  if (auto v = h->integer("max_connections_per_client", 1, 100000)) {
    c.http_max_connections_per_client = static_cast<std::uint64_t>(*v);
  }
  if (c.http_max_connections_per_client > c.http_max_connections) {
    h->diag().add(h->get("max_connections_per_client"), h->child_path("max_connections_per_client"),
                  "expected at most max_connections (" + std::to_string(c.http_max_connections) +
                      "): one client cannot hold more than all of them");
  }
  duration_within(*h, "request_timeout", std::chrono::seconds(1), std::chrono::minutes(1), "1s to 1m",
                  c.http_request_timeout);
  duration_within(*h, "idle_timeout", std::chrono::seconds(1), std::chrono::minutes(10), "1s to 10m",
                  c.http_idle_timeout);
  if (c.http_request_timeout >= c.http_max_connection_time && h->has("request_timeout")) {
    h->diag().add(h->get("request_timeout"), h->child_path("request_timeout"),
                  "expected less than max_connection_time");
  }
}
}  // namespace

std::optional<std::string> plaintext_refusal(const DaemonConfig& c) {
  if (c.tls || c.listen.is_loopback() || c.allow_plaintext_beyond_loopback) { return std::nullopt; }
  return c.listen.display() +
         " is beyond loopback and there is no tls section: the bearer token and every answer would "
         "cross the network unencrypted; set tls: {cert_file, key_file}, or allow_plaintext_beyond_loopback: true to "
         "accept that";
}

HostPaths host_paths(const DaemonConfig& c, const sys::SysRoot& root) {
  HostPaths h{root.host_path(c.token_file),
              root.host_path(c.profiles_dir),
              root.host_path(c.state_dir),
              root.host_path(c.agent_path),
              {},
              {}};
  if (c.tls) {
    h.cert_file = root.host_path(c.tls->cert_file);
    h.key_file = root.host_path(c.tls->key_file);
  }
  return h;
}

ConfigLoad load_config_text(std::string_view text, const std::string& file_name) {
  ConfigLoad out{std::nullopt, profile::Diagnostics(file_name)};
  DaemonConfig c;
  c.source_file = file_name;
  if (only_comments(text)) {  // an empty file: every default
    out.config = c;
    return out;
  }
  auto doc = profile::parse_yaml_text(text, out.diagnostics, 256 * 1024);
  if (!doc) { return out; }
  MapReader root(*doc, "", out.diagnostics,
                 {"apiVersion", "kind", "listen", "allow_non_loopback", "allow_plaintext_beyond_loopback", "token_file",
                  "profiles_dir", "state_dir", "agent", "selftest", "apply", "reconcile", "http", "device_monitor",
                  "tls", "health", "metrics"});
  if (!root.valid()) { return out; }
  read_config_kind(root, out.diagnostics);
  read_config_listen(root, out.diagnostics, c);
  absolute_path(root, "token_file", c.token_file);
  absolute_path(root, "profiles_dir", c.profiles_dir);
  absolute_path(root, "state_dir", c.state_dir);
  if (auto v = root.boolean("apply")) { c.apply = *v; }
  if (auto v = root.boolean("device_monitor")) { c.device_monitor = *v; }
  read_config_agent(root, c);
  read_config_reconcile(root, c);
  read_config_selftest(root, c);
  read_tls(root, c);
  if (auto why = plaintext_refusal(c); why && out.diagnostics.empty()) {
    out.diagnostics.add(root.get("listen"), "listen", *why);
  }
  read_health(root, c);
  read_config_metrics(root, c);
  read_config_http(root, c);
  if (out.diagnostics.empty()) { out.config = std::move(c); }
  return out;
}

ConfigLoad load_config_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    ConfigLoad r{std::nullopt, profile::Diagnostics(file.string())};
    r.diagnostics.add(0, 0, "", std::filesystem::exists(file, ec) ? "not a regular file" : "no such file");
    return r;
  }
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) {
    ConfigLoad r{std::nullopt, profile::Diagnostics(file.string())};
    r.diagnostics.add(0, 0, "", "cannot read the file");
    return r;
  }
  return load_config_text(ss.str(), file.string());
}

std::shared_ptr<const tls::Identity> read_tls_identity(const DaemonConfig& c, const sys::SysRoot& root,
                                                       profile::Diagnostics& diag) {
  if (!c.tls) { return nullptr; }
  const auto& f = *c.tls;
  const HostPaths paths = host_paths(c, root);
  auto chain = tls::read_certificate_chain(paths.cert_file);
  if (!chain) { diag.add(f.cert_line, f.cert_column, "tls.cert_file", chain.error().message); }
  auto key = tls::read_private_key(paths.key_file);
  if (!key) { diag.add(f.key_line, f.key_column, "tls.key_file", key.error().message); }
  if (!chain || !key) { return nullptr; }
  auto id = tls::make_identity(std::move(chain).value(), std::move(key).value());
  if (!id) {
    diag.add(f.key_line, f.key_column, "tls.key_file",
             "TLS key file " + f.key_file + " does not belong to the certificate in " + f.cert_file + " (" +
                 id.error().message + "); expected the key the certificate was made for");
    return nullptr;
  }
  return *id;
}

}  // namespace p2pnode::engine
