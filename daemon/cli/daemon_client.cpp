#include "cli/daemon_client.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <filesystem>
#include <iostream>

#include "engine/config.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::cli {

std::optional<Target> resolve_target(const DaemonClientOptions& o, const std::string& who) {
  const sys::SysRoot root(o.root);
  const bool explicit_file = !o.config.empty();
  const std::string file = explicit_file ? o.config : root.host_path("/etc/p2pnode/p2pnode.yaml").string();
  std::error_code ec;
  engine::DaemonConfig c;
  if (explicit_file || std::filesystem::exists(file, ec)) {
    auto loaded = engine::load_config_file(file);
    if (loaded.config) {
      c = *loaded.config;
    } else if (explicit_file) {
      std::cerr << who << ": the daemon configuration is not valid:\n" << loaded.diagnostics.format();
      return std::nullopt;
    } else {  // e.g. not readable by this user: the defaults, as without a file
      std::cerr << who << ": ignoring " << file << ", which is not valid here (pass --config or --url):\n"
                << loaded.diagnostics.format();
    }
  }
  Target t;
  t.config_has_tls = c.tls.has_value();
  t.token_file = engine::host_paths(c, root).token_file.string();
  if (!o.url.empty()) {
    t.url = o.url;
  } else {
    engine::ListenAddress a = c.listen;  // a wildcard listener is reached on loopback
    if (a.host == "0.0.0.0") { a.host = "127.0.0.1"; }
    if (a.host == "::") { a.host = "::1"; }
    t.url = (c.tls ? "https://" : "http://") + a.display();
  }
  if (!o.cacert.empty()) {
    t.ca_file = o.cacert;
  } else if (c.tls) {
    t.ca_file = engine::host_paths(c, root).cert_file.string();
    t.pin_ca_file = true;
  }
  return t;
}

void set_trust(httplib::Client& client, const Target& t) {
  SSL_CTX* ctx = client.ssl_context();
  if (!ctx) {
    return;  // plain http
  }
  client.enable_server_certificate_verification(true);
  if (t.ca_file.empty()) {
    return;  // OpenSSL's default CA store
  }
  client.set_ca_cert_path(t.ca_file);
  // The daemon's own certificate (self-signed or not) is trusted as it is; no root is needed.
  if (t.pin_ca_file) { X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(ctx), X509_V_FLAG_PARTIAL_CHAIN); }
}

std::string connect_hint(const httplib::Client& client, const Target& t, httplib::Error e) {
  const bool https = t.url.rfind("https://", 0) == 0;
  if (e == httplib::Error::SSLServerVerification) {
    return "; the daemon's certificate did not verify (" +
           std::string(X509_verify_cert_error_string(client.get_openssl_verify_result())) + ") against " +
           (t.ca_file.empty() ? "the system's CA store" : t.ca_file) +
           ": it must name the URL's host (subjectAltName), or pass --cacert with the CA that signed it";
  }
  if (e == httplib::Error::SSLLoadingCerts) { return "; cannot read the CA file " + t.ca_file; }
  if (!https && t.config_has_tls) { return "; the configuration sets tls, so the daemon speaks https://"; }
  return "";
}

}  // namespace p2pnode::cli
