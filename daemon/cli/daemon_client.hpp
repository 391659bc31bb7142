#pragma once
// Reaching a running daemon from the command line (`p2pnode status`, `p2pnode selftest run`): its
// address and, over HTTPS, the certificate to trust come from the daemon's own configuration;
// options override them.
#include <httplib.h>

#include <optional>
#include <string>

namespace p2pnode::cli {

struct DaemonClientOptions {
  std::string url;  // empty: from the configuration's listen and tls
  std::string config;
  std::string root = "/";
  std::string cacert;
  int timeout_s = 10;
};

// Where to connect and whom to trust, from the options and the daemon's configuration.
struct Target {
  std::string url;
  std::string ca_file;       // empty: the system's CA store (https) or none (http)
  bool pin_ca_file = false;  // the configured certificate itself is the trust anchor
  bool config_has_tls = false;
  std::string token_file;  // the configuration's token_file, as a host path
};

// `who` names the command in messages ("p2pnode status").
std::optional<Target> resolve_target(const DaemonClientOptions& o, const std::string& who);
void set_trust(httplib::Client& client, const Target& t);
// What to add to "cannot reach the daemon": a certificate that did not verify, http against a TLS config.
std::string connect_hint(const httplib::Client& client, const Target& t, httplib::Error e);

}  // namespace p2pnode::cli
