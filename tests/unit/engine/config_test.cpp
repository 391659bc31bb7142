#include <gtest/gtest.h>

#include "engine/config.hpp"
#include "unit/tls/test_pki.hpp"

using namespace p2pnode::engine;

TEST(DaemonConfig, EmptyFileGivesDefaults) {
  auto r = load_config_text("", "p2pnode.yaml");
  ASSERT_TRUE(r.config) << r.diagnostics.format();
  EXPECT_EQ(r.config->listen.display(), "127.0.0.1:9470");
  EXPECT_EQ(r.config->state_file(), "/var/lib/p2pnode/state.json");
  EXPECT_TRUE(r.config->apply);
  EXPECT_TRUE(r.config->selftest_on_start);
  EXPECT_FALSE(r.config->metrics_full_detail);
}

TEST(DaemonConfig, MetricsDetailIsCompactOrFull) {
  auto full = load_config_text("metrics:\n  detail: full\n", "c.yaml");
  ASSERT_TRUE(full.config) << full.diagnostics.format();
  EXPECT_TRUE(full.config->metrics_full_detail);
  auto compact = load_config_text("metrics: {detail: compact}\n", "c.yaml");
  ASSERT_TRUE(compact.config) << compact.diagnostics.format();
  EXPECT_FALSE(compact.config->metrics_full_detail);
  auto bad = load_config_text("metrics:\n  detail: everything\n", "c.yaml");
  EXPECT_FALSE(bad.config);
  EXPECT_NE(bad.diagnostics.format().find("c.yaml:2:"), std::string::npos) << bad.diagnostics.format();
  EXPECT_NE(bad.diagnostics.format().find("expected 'compact' or 'full', found 'everything'"), std::string::npos)
      << bad.diagnostics.format();
}

TEST(DaemonConfig, ReadsEveryKey) {
  auto r = load_config_text(R"(apiVersion: p2pnode/v1
kind: DaemonConfig
listen: "[::1]:0"
token_file: /etc/p2pnode/t
profiles_dir: /p
state_dir: /s
apply: false
device_monitor: false
agent:
  path: /opt/agent
  args: [--mode, rounds]
selftest:
  schedule: 2h
  time_limit: 90s
  on_start: false
http:
  threads: 4
  max_body: 8KiB
  max_connection_time: 2m
)",
                            "c.yaml");
  ASSERT_TRUE(r.config) << r.diagnostics.format();
  const auto& c = *r.config;
  EXPECT_EQ(c.listen.host, "::1");
  EXPECT_EQ(c.listen.port, 0);
  EXPECT_EQ(c.listen.display(), "[::1]:0");
  EXPECT_EQ(c.token_file, "/etc/p2pnode/t");
  EXPECT_EQ(c.state_file(), "/s/state.json");
  EXPECT_FALSE(c.apply);
  EXPECT_FALSE(c.device_monitor);
  EXPECT_EQ(c.agent_path, "/opt/agent");
  EXPECT_EQ(c.agent_args, (std::vector<std::string>{"--mode", "rounds"}));
  EXPECT_EQ(c.selftest_schedule, std::chrono::hours(2));
  EXPECT_EQ(c.selftest_time_limit, std::chrono::seconds(90));
  EXPECT_FALSE(c.selftest_on_start);
  EXPECT_EQ(c.http_threads, 4);
  EXPECT_EQ(c.http_max_body, 8u * 1024);
  EXPECT_EQ(c.http_max_connection_time, std::chrono::minutes(2));
}

TEST(DaemonConfig, MaxConnectionTimeBounds) {
  EXPECT_EQ(load_config_text("", "d.yaml").config->http_max_connection_time, std::chrono::seconds(60));
  for (const char* bad : {"1s", "2h", "soon"}) {
    auto r = load_config_text(std::string("http:\n  max_connection_time: ") + bad + "\n", "c.yaml");
    EXPECT_FALSE(r.config) << bad;
    EXPECT_NE(r.diagnostics.format().find("c.yaml:2:"), std::string::npos) << r.diagnostics.format();
    EXPECT_NE(r.diagnostics.format().find("http.max_connection_time"), std::string::npos) << r.diagnostics.format();
  }
}

TEST(DaemonConfig, ErrorsNameLineAndKey) {
  auto r = load_config_text("listen: 127.0.0.1:9470\nlisen_typo: 1\nstate_dir: relative/path\n", "bad.yaml");
  EXPECT_FALSE(r.config);
  const std::string text = r.diagnostics.format();
  EXPECT_NE(text.find("bad.yaml:2:"), std::string::npos) << text;
  EXPECT_NE(text.find("listen"), std::string::npos) << text;  // the suggestion
  EXPECT_NE(text.find("bad.yaml:3:"), std::string::npos) << text;
  EXPECT_NE(text.find("absolute path"), std::string::npos) << text;
}

TEST(DaemonConfig, NonLoopbackNeedsToBeAllowed) {
  EXPECT_FALSE(load_config_text("listen: 0.0.0.0:9470\n", "c").config);
  // Beyond loopback without TLS: plain HTTP must be allowed by its own setting as well.
  auto plain = load_config_text("listen: 0.0.0.0:9470\nallow_non_loopback: true\n", "c");
  ASSERT_FALSE(plain.config);
  EXPECT_NE(plain.diagnostics.format().find("allow_plaintext_beyond_loopback"), std::string::npos)
      << plain.diagnostics.format();
  auto ok =
      load_config_text("listen: 0.0.0.0:9470\nallow_non_loopback: true\nallow_plaintext_beyond_loopback: true\n", "c");
  ASSERT_TRUE(ok.config) << ok.diagnostics.format();
  EXPECT_FALSE(ok.config->listen.is_loopback());
  EXPECT_TRUE(ok.config->allow_plaintext_beyond_loopback);
}

// Loopback is decided on the parsed address: a name is never taken as loopback, whatever it says.
TEST(DaemonConfig, LoopbackIsTheAddressNotTheText) {
  for (const char* yes : {"127.0.0.1:1", "127.255.0.9:1", "[::1]:1", "[::ffff:127.0.0.1]:1"}) {
    EXPECT_TRUE(parse_listen(yes)->is_loopback()) << yes;
  }
  for (const char* no : {"127.x.example:1", "127.0.0.1.nip.io:1", "localhost:1", "0.0.0.0:1", "[::]:1", "10.0.0.1:1",
                         "[::ffff:10.0.0.1]:1", "1270.0.0.1:1"}) {
    EXPECT_FALSE(parse_listen(no)->is_loopback()) << no;
  }
  // A config listening on a name that resolves elsewhere is refused like any address beyond loopback.
  const auto named = load_config_text("listen: 127.0.0.1.example.org:9470\n", "c");
  ASSERT_FALSE(named.config);
  EXPECT_NE(named.diagnostics.format().find("is not a loopback address"), std::string::npos)
      << named.diagnostics.format();
}

TEST(DaemonConfig, ServerNames) {
  auto ok = load_config_text("http:\n  server_names: [node1.example.org, \"*.gpu.example.org\"]\n", "c");
  ASSERT_TRUE(ok.config) << ok.diagnostics.format();
  EXPECT_EQ(ok.config->http_server_names.size(), 2u);
  for (const char* bad : {"\"-x\"", "\"a b\"", "\"a*.b\"", "\"a/b\""}) {
    EXPECT_FALSE(load_config_text(std::string("http:\n  server_names: [") + bad + "]\n", "c").config) << bad;
  }
}

TEST(DaemonConfig, RejectsBadValues) {
  for (const char* text : {"listen: 127.0.0.1\n", "listen: 127.0.0.1:99999\n", "http:\n  threads: 0\n",
                           "selftest:\n  schedule: 10s\n", "apply: maybe\n", "- a list\n", "kind: NodeProfile\n",
                           "agent:\n  path: p2pnode-agent\n", "listen: [1, 2]\n", "{unclosed\n"}) {
    auto r = load_config_text(text, "c");
    EXPECT_FALSE(r.config) << text;
    EXPECT_FALSE(r.diagnostics.empty()) << text;
  }
}

TEST(DaemonConfig, MissingFileIsReported) {
  auto r = load_config_file("/nonexistent/p2pnode.yaml");
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.diagnostics.format().find("no such file"), std::string::npos);
}

TEST(ListenAddress, Parses) {
  EXPECT_EQ(parse_listen("localhost:80")->port, 80);
  EXPECT_TRUE(parse_listen("127.0.0.2:1")->is_loopback());
  std::string why;
  EXPECT_FALSE(parse_listen(":80", &why));
  EXPECT_FALSE(parse_listen("::1:80", &why));
  EXPECT_NE(why.find("brackets"), std::string::npos);
  EXPECT_FALSE(parse_listen("[::1]80", &why));
  EXPECT_FALSE(parse_listen("host:-1", &why));
}

TEST(DaemonConfig, ShippedExampleIsValid) {
  auto r = load_config_file(std::filesystem::path(P2PNODE_SOURCE_DIR) / "systemd/p2pnode.yaml");
  ASSERT_TRUE(r.config) << r.diagnostics.format();
  EXPECT_EQ(r.config->listen.display(), "127.0.0.1:9470");
}

// ---- tls ----

TEST(DaemonConfig, TlsIsOptionalAndNeedsBothFiles) {
  auto none = load_config_text("listen: 127.0.0.1:9470\n", "c");
  ASSERT_TRUE(none.config);
  EXPECT_FALSE(none.config->tls);

  auto both = load_config_text(
      "listen: 127.0.0.1:9470\ntls:\n  cert_file: /etc/p2pnode/tls/cert.pem\n  key_file: /etc/p2pnode/tls/key.pem\n",
      "c");
  ASSERT_TRUE(both.config) << both.diagnostics.format();
  ASSERT_TRUE(both.config->tls);
  EXPECT_EQ(both.config->tls->cert_file, "/etc/p2pnode/tls/cert.pem");
  EXPECT_EQ(both.config->tls->key_file, "/etc/p2pnode/tls/key.pem");
  EXPECT_EQ(both.config->tls->cert_line, 3);
  EXPECT_EQ(both.config->tls->key_line, 4);
  EXPECT_EQ(both.config->tls->key_column, 13);

  auto flow = load_config_text("tls: { cert_file: /c.pem, key_file: /k.pem }\n", "c");
  ASSERT_TRUE(flow.config) << flow.diagnostics.format();
  EXPECT_EQ(flow.config->tls->key_file, "/k.pem");
}

TEST(DaemonConfig, TlsBadCombinationsNameTheLine) {
  struct Case {
    const char* text;
    const char* where;
    const char* says;
  } cases[] = {
      {"apply: true\ntls:\n  cert_file: /c.pem\n", "c.yaml:3:", "missing key_file"},
      {"tls:\n  key_file: /k.pem\n", "c.yaml:2:", "missing cert_file"},
      {"tls: {}\n", "c.yaml:1:", "missing cert_file and key_file"},
      {"tls:\n  cert_file: c.pem\n  key_file: /k.pem\n", "c.yaml:2:", "absolute path"},
      {"tls:\n  cert_file: /same.pem\n  key_file: /same.pem\n", "c.yaml:3:", "apart from cert_file"},
      {"tls:\n  cert_file: /c.pem\n  key_file: /k.pem\n  ca_file: /ca.pem\n", "c.yaml:4:", "ca_file"},
      {"tls: true\n", "c.yaml:1:", "tls"},
  };
  for (const auto& c : cases) {
    auto r = load_config_text(c.text, "c.yaml");
    EXPECT_FALSE(r.config) << c.text;
    const std::string text = r.diagnostics.format();
    EXPECT_NE(text.find(c.where), std::string::npos) << c.text << "\n" << text;
    EXPECT_NE(text.find(c.says), std::string::npos) << c.text << "\n" << text;
  }
}

namespace {
namespace fs = std::filesystem;
constexpr auto kOwnerOnly = fs::perms::owner_read | fs::perms::owner_write;
constexpr auto kWorldReadable = kOwnerOnly | fs::perms::group_read | fs::perms::others_read;
constexpr const char* kTlsConfig =
    "listen: 127.0.0.1:0\ntls:\n  cert_file: /etc/p2pnode/tls/cert.pem\n  key_file: /etc/p2pnode/tls/key.pem\n";

// Loads kTlsConfig against a root holding the given cert and key texts; the diagnostics text.
std::string tls_problems(const std::string& cert, const std::string& key, fs::perms key_mode = kOwnerOnly,
                         bool* got_identity = nullptr) {
  p2pnode::test::TempDir root("config-tls");
  if (!cert.empty()) { p2pnode::test::write_file(root.path() / "etc/p2pnode/tls/cert.pem", cert, kWorldReadable); }
  if (!key.empty()) { p2pnode::test::write_file(root.path() / "etc/p2pnode/tls/key.pem", key, key_mode); }
  auto loaded = load_config_text(kTlsConfig, "p2pnode.yaml");
  EXPECT_TRUE(loaded.config) << loaded.diagnostics.format();
  if (!loaded.config) { return "no config"; }
  auto id = read_tls_identity(*loaded.config, p2pnode::sys::SysRoot(root.path()), loaded.diagnostics);
  if (got_identity) { *got_identity = id != nullptr; }
  EXPECT_EQ(id == nullptr, !loaded.diagnostics.empty());
  return loaded.diagnostics.format();
}
}  // namespace

TEST(DaemonConfig, TlsFilesAreCheckedWhereTheConfigNamesThem) {
  const auto pem = p2pnode::test::make_pem("node");
  bool got = false;
  EXPECT_EQ(tls_problems(pem.cert, pem.key, kOwnerOnly, &got), "");
  EXPECT_TRUE(got);

  const std::string open = tls_problems(pem.cert, pem.key, kOwnerOnly | fs::perms::group_read);
  EXPECT_NE(open.find("p2pnode.yaml:4:13: tls.key_file: TLS key file"), std::string::npos) << open;
  EXPECT_NE(open.find("readable by group or others (mode 640); make it 0600 or 0400"), std::string::npos) << open;

  const std::string mismatch = tls_problems(pem.cert, p2pnode::test::make_pem("other").key);
  EXPECT_NE(mismatch.find("p2pnode.yaml:4:13: tls.key_file:"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("does not belong to the certificate in /etc/p2pnode/tls/cert.pem"), std::string::npos)
      << mismatch;

  const std::string garbage = tls_problems("-----BEGIN CERTIFICATE-----\n@@@\n-----END CERTIFICATE-----\n", pem.key);
  EXPECT_NE(garbage.find("p2pnode.yaml:3:14: tls.cert_file: TLS certificate file"), std::string::npos) << garbage;
  EXPECT_NE(garbage.find("holds no PEM certificate"), std::string::npos) << garbage;

  const std::string garbage_key = tls_problems(pem.cert, "not a key\n");
  EXPECT_NE(garbage_key.find("p2pnode.yaml:4:13:"), std::string::npos) << garbage_key;
  EXPECT_NE(garbage_key.find("holds no PEM private key"), std::string::npos) << garbage_key;

  const std::string missing = tls_problems("", "");  // both reported at once
  EXPECT_NE(missing.find("p2pnode.yaml:3:14:"), std::string::npos) << missing;
  EXPECT_NE(missing.find("p2pnode.yaml:4:13:"), std::string::npos) << missing;
  EXPECT_NE(missing.find("No such file"), std::string::npos) << missing;
}

TEST(DaemonConfig, NoTlsReadsNoFiles) {
  auto loaded = load_config_text("listen: 127.0.0.1:0\n", "c");
  ASSERT_TRUE(loaded.config);
  EXPECT_EQ(read_tls_identity(*loaded.config, p2pnode::sys::SysRoot("/nonexistent"), loaded.diagnostics), nullptr);
  EXPECT_TRUE(loaded.diagnostics.empty());
}

// --root R: every path the configuration names is inside R, the agent and the TLS files included.
TEST(DaemonConfig, EveryConfiguredPathIsInsideTheRoot) {
  auto r = load_config_text(R"(token_file: /etc/p2pnode/t
profiles_dir: /p
state_dir: /s
agent: {path: /opt/agent}
tls: {cert_file: /tls/c.pem, key_file: /tls/k.pem}
)",
                            "c.yaml");
  ASSERT_TRUE(r.config) << r.diagnostics.format();
  const auto in_r = host_paths(*r.config, p2pnode::sys::SysRoot("/r"));
  EXPECT_EQ(in_r.token_file, "/r/etc/p2pnode/t");
  EXPECT_EQ(in_r.profiles_dir, "/r/p");
  EXPECT_EQ(in_r.state_dir, "/r/s");
  EXPECT_EQ(in_r.agent_path, "/r/opt/agent");
  EXPECT_EQ(in_r.cert_file, "/r/tls/c.pem");
  EXPECT_EQ(in_r.key_file, "/r/tls/k.pem");
  const auto real = host_paths(*r.config, p2pnode::sys::SysRoot("/"));
  EXPECT_EQ(real.token_file, "/etc/p2pnode/t");
  EXPECT_EQ(real.state_dir, "/s");
  EXPECT_EQ(real.agent_path, "/opt/agent");
  EXPECT_EQ(real.cert_file, "/tls/c.pem");
}

TEST(DaemonConfig, HostPathsWithoutTlsLeaveTheTlsFilesEmpty) {
  auto r = load_config_text("", "c.yaml");
  ASSERT_TRUE(r.config);
  const auto h = host_paths(*r.config, p2pnode::sys::SysRoot("/r"));
  EXPECT_EQ(h.agent_path, "/r/usr/libexec/p2pnode/p2pnode-agent");
  EXPECT_TRUE(h.cert_file.empty());
  EXPECT_TRUE(h.key_file.empty());
}

// The API server's limits against hostile clients: safe defaults, each settable, bad
// values named with file:line:column.
TEST(DaemonConfig, HttpLimitsHaveSafeDefaultsAndAreChecked) {
  const auto d = *load_config_text("", "d.yaml").config;
  EXPECT_EQ(d.http_threads, 2);
  EXPECT_EQ(d.http_max_connections, 256u);
  EXPECT_EQ(d.http_max_connections_per_client, 32u);
  EXPECT_EQ(d.http_request_timeout, std::chrono::seconds(5));
  EXPECT_EQ(d.http_idle_timeout, std::chrono::seconds(10));
  auto r = load_config_text(
      "http:\n  max_connections: 1000\n  max_connections_per_client: 8\n  request_timeout: 2s\n"
      "  idle_timeout: 30s\n",
      "c.yaml");
  ASSERT_TRUE(r.config) << r.diagnostics.format();
  EXPECT_EQ(r.config->http_max_connections, 1000u);
  EXPECT_EQ(r.config->http_max_connections_per_client, 8u);
  EXPECT_EQ(r.config->http_request_timeout, std::chrono::seconds(2));
  EXPECT_EQ(r.config->http_idle_timeout, std::chrono::seconds(30));
  for (const char* bad :
       {"http:\n  max_connections: 4\n", "http:\n  max_connections_per_client: 0\n",
        "http:\n  max_connections: 64\n  max_connections_per_client: 65\n", "http:\n  request_timeout: 0s\n",
        "http:\n  request_timeout: 2m\n", "http:\n  idle_timeout: 20m\n",
        "http:\n  max_connection_time: 10s\n  request_timeout: 30s\n"}) {
    auto b = load_config_text(bad, "c.yaml");
    EXPECT_FALSE(b.config) << bad;
    EXPECT_NE(b.diagnostics.format().find("c.yaml:"), std::string::npos) << b.diagnostics.format();
  }
}

TEST(DaemonConfig, HealthSection) {
  auto d = load_config_text("", "c.yaml");
  ASSERT_TRUE(d.config);
  EXPECT_TRUE(d.config->health.enabled);
  EXPECT_EQ(d.config->health.interval, std::chrono::seconds(10));
  EXPECT_EQ(d.config->health.window, std::chrono::minutes(10));
  EXPECT_EQ(d.config->health.nvlink_interval, std::chrono::minutes(1));
  auto r = load_config_text(
      "health:\n  interval: 2s\n  window: 1h\n  agent_time_limit: 800ms\n  nvlink: false\n  nvlink_interval: 5s\n",
      "c.yaml");
  ASSERT_TRUE(r.config) << r.diagnostics.format();
  EXPECT_EQ(r.config->health.interval, std::chrono::seconds(2));
  EXPECT_EQ(r.config->health.window, std::chrono::hours(1));
  EXPECT_EQ(r.config->health.agent_time_limit, std::chrono::milliseconds(800));
  EXPECT_FALSE(r.config->health.nvlink);
  EXPECT_EQ(r.config->health.nvlink_interval, std::chrono::seconds(5));
  for (const char* bad : {"health:\n  interval: 100ms\n", "health:\n  window: 5s\n",
                          "health:\n  interval: 1m\n  window: 30s\n", "health:\n  intervall: 1s\n"}) {
    auto b = load_config_text(bad, "c.yaml");
    EXPECT_FALSE(b.config) << bad;
    EXPECT_NE(b.diagnostics.format().find("c.yaml:"), std::string::npos) << b.diagnostics.format();
    EXPECT_NE(b.diagnostics.format().find("health."), std::string::npos) << b.diagnostics.format();
  }
}
