#pragma once
// The daemon's own settings (/etc/p2pnode/p2pnode.yaml), read as strictly as profiles: every
// problem names the file, line and column. Every path in it is inside the SysRoot (see
// host_paths below).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "health/thresholds.hpp"
#include "profile/yaml_reader.hpp"
#include "sys/sysroot.hpp"
#include "tls/identity.hpp"

namespace p2pnode::engine {

struct ListenAddress {
  std::string host = "127.0.0.1";
  int port = 9470;  // 0: any free port (tests)
  std::string display() const;
  bool is_loopback() const;
};
// "127.0.0.1:9470", "[::1]:9470", "0.0.0.0:9470"; nullopt with the reason in *why.
std::optional<ListenAddress> parse_listen(std::string_view text, std::string* why = nullptr);

// HTTPS for the API and /metrics: PEM files inside the SysRoot.
struct TlsFiles {
  std::string cert_file;                                             // the server's certificate, then any intermediates
  std::string key_file;                                              // its private key, 0600 or 0400
  int cert_line = 0, cert_column = 0, key_line = 0, key_column = 0;  // where the configuration names them
};

struct DaemonConfig {
  std::string source_file;  // where it was read from; empty: built-in defaults
  ListenAddress listen;
  std::string token_file = "/etc/p2pnode/token";
  std::string profiles_dir = "/etc/p2pnode/profiles";
  std::string state_dir = "/var/lib/p2pnode";
  std::string agent_path = "/usr/libexec/p2pnode/p2pnode-agent";
  std::vector<std::string> agent_args;  // extra arguments after --json
  // Self-test: the profile's schedule unless overridden here; run one when the daemon starts.
  std::optional<std::chrono::nanoseconds> selftest_schedule;
  std::optional<std::chrono::nanoseconds> selftest_time_limit;
  bool selftest_on_start = true;
  bool apply = true;  // false: check and plan only, never change the box
  // A reconcile pass longer than this is cancelled (its commands killed, the pass recorded as
  // failed); one still running 10 minutes after that stops feeding systemd's watchdog. DKMS builds
  // for several kernels are the long part (about 10-30 minutes each on 2 cores).
  std::chrono::milliseconds reconcile_time_limit{std::chrono::hours(3)};
  // The API server (http/server.hpp): event loops, and what keeps hostile clients from starving it.
  int http_threads = 2;
  std::uint64_t http_max_body = 64 * 1024;
  std::uint64_t http_max_connections = 256;            // in all; more are closed at accept
  std::uint64_t http_max_connections_per_client = 32;  // from one address; more are closed at accept
  std::chrono::milliseconds http_request_timeout{
      std::chrono::seconds(5)};  // a whole request, from connect or the last answer
  std::chrono::milliseconds http_idle_timeout{std::chrono::seconds(10)};         // no byte either way
  std::chrono::milliseconds http_max_connection_time{std::chrono::seconds(60)};  // then cut off
  bool allow_non_loopback = false;               // listening beyond loopback must be said twice
  bool allow_plaintext_beyond_loopback = false;  // plain HTTP beyond loopback must be said a third time
  std::vector<std::string> http_server_names;    // Host names answered besides addresses and localhost
  bool device_monitor = true;                    // reconcile on PCI add/remove of devices the profile names
  std::optional<TlsFiles> tls;                   // absent: plain HTTP
  // Passive health between self-tests (engine/health_pass.hpp): AER, links, NVLink, Xid.
  struct Health {
    bool enabled = true;
    std::chrono::milliseconds interval{std::chrono::seconds(10)};         // one pass every …
    std::chrono::milliseconds window{std::chrono::minutes(10)};           // a counter that rose within it is a finding
    std::chrono::milliseconds agent_time_limit{std::chrono::seconds(5)};  // `p2pnode-agent --health`
    bool nvlink = true;                                                   // run the agent for NVLink counters
    // NVML's init costs CPU on every agent start: NVLink is read this often, AER and Xid every pass.
    std::chrono::milliseconds nvlink_interval{std::chrono::minutes(1)};
    // The limits each counter is judged by (health.limits; docs/health.md has the defaults' sources).
    health::HealthLimits limits = health::HealthLimits::defaults();
  } health;
  // /metrics: false (`metrics: {detail: compact}`, the default) keeps a node within its series
  // budget (constants per path class, error flags only where set); true adds every per-pair figure.
  bool metrics_full_detail = false;

  std::string state_file() const { return state_dir + "/state.json"; }
};

struct ConfigLoad {
  std::optional<DaemonConfig> config;  // set only when there are no diagnostics
  profile::Diagnostics diagnostics;
};

// The one rule for `--root R`: every absolute path in the configuration (token_file, profiles_dir,
// state_dir, agent.path, tls.cert_file, tls.key_file) is a path inside R, exactly as SysRoot treats
// every other path the daemon reads or writes; with the default root "/" they are the paths as
// written. Every user of a configured path goes through this function (the state store takes
// state_dir through the SysRoot itself, which is the same rule).
struct HostPaths {
  std::filesystem::path token_file, profiles_dir, state_dir, agent_path;
  std::filesystem::path cert_file, key_file;  // empty without tls
};
HostPaths host_paths(const DaemonConfig& c, const sys::SysRoot& root);
// Why the daemon must not start as configured: plain HTTP beyond loopback without
// allow_plaintext_beyond_loopback (the token would cross the network in clear); nullopt when fine.
std::optional<std::string> plaintext_refusal(const DaemonConfig& c);

ConfigLoad load_config_text(std::string_view text, const std::string& file_name);
ConfigLoad load_config_file(const std::filesystem::path& file);

// Only reads: the TLS files `c` names, inside `root`, checked as the daemon will use them (the
// key owner-only, both valid PEM, the key the certificate's). Problems go to `diag` at the line
// of the key naming the file. nullptr when `c` has no tls or on a problem.
std::shared_ptr<const tls::Identity> read_tls_identity(const DaemonConfig& c, const sys::SysRoot& root,
                                                       profile::Diagnostics& diag);

}  // namespace p2pnode::engine
