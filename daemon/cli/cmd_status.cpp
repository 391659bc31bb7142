// `p2pnode status`: asks a running daemon and prints the same report as `check`, then the
// node state and its reasons. It finds the daemon, and over HTTPS the certificate to trust, in
// the daemon's own configuration.
#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "engine/views.hpp"
#include "engine/config.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::cli {

namespace {
struct StatusOptions {
  std::string url;  // empty: from the configuration's listen and tls
  std::string config;
  std::string root = "/";
  std::string cacert;
  bool json = false;
  int timeout_s = 10;
};

// Where to connect and whom to trust, from the options and the daemon's configuration.
struct Target {
  std::string url;
  std::string ca_file;         // empty: the system's CA store (https) or none (http)
  bool pin_ca_file = false;    // the configured certificate itself is the trust anchor
  bool config_has_tls = false;
};

std::optional<Target> resolve_target(const StatusOptions& o) {
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
      std::cerr << "p2pnode status: the daemon configuration is not valid:\n" << loaded.diagnostics.format();
      return std::nullopt;
    } else {  // e.g. not readable by this user: the defaults, as without a file
      std::cerr << "p2pnode status: ignoring " << file << ", which is not valid here (pass --config or --url):\n"
                << loaded.diagnostics.format();
    }
  }
  Target t;
  t.config_has_tls = c.tls.has_value();
  if (!o.url.empty()) {
    t.url = o.url;
  } else {
    engine::ListenAddress a = c.listen;  // a wildcard listener is reached on loopback
    if (a.host == "0.0.0.0") a.host = "127.0.0.1";
    if (a.host == "::") a.host = "::1";
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
  if (!ctx) return;  // plain http
  client.enable_server_certificate_verification(true);
  if (t.ca_file.empty()) return;  // OpenSSL's default CA store
  client.set_ca_cert_path(t.ca_file);
  // The daemon's own certificate (self-signed or not) is trusted as it is; no root is needed.
  if (t.pin_ca_file) X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(ctx), X509_V_FLAG_PARTIAL_CHAIN);
}

std::string connect_hint(const httplib::Client& client, const Target& t, httplib::Error e) {
  const bool https = t.url.rfind("https://", 0) == 0;
  if (e == httplib::Error::SSLServerVerification)
    return "; the daemon's certificate did not verify (" +
           std::string(X509_verify_cert_error_string(client.get_openssl_verify_result())) + ") against " +
           (t.ca_file.empty() ? "the system's CA store" : t.ca_file) +
           ": it must name the URL's host (subjectAltName), or pass --cacert with the CA that signed it";
  if (e == httplib::Error::SSLLoadingCerts) return "; cannot read the CA file " + t.ca_file;
  if (!https && t.config_has_tls) return "; the configuration sets tls, so the daemon speaks https://";
  return "";
}

int run_status(const StatusOptions& o) {
  auto target = resolve_target(o);
  if (!target) return kUsage;
  httplib::Client client(target->url);
  if (!client.is_valid()) {
    std::cerr << "p2pnode status: cannot use the URL " << target->url << "; expected http://HOST:PORT or https://HOST:PORT\n";
    return kUsage;
  }
  set_trust(client, *target);
  client.set_connection_timeout(o.timeout_s, 0);
  client.set_read_timeout(o.timeout_s, 0);
  auto status = client.Get("/v1/status");
  if (!status) {
    std::cerr << "p2pnode status: cannot reach the daemon at " << target->url << ": " << httplib::to_string(status.error())
              << connect_hint(client, *target, status.error()) << "\n";
    return kUsage;
  }
  if (status->status != 200) {
    std::cerr << "p2pnode status: " << target->url << "/v1/status answered " << status->status << ": " << status->body << "\n";
    return kUsage;
  }
  auto st = nlohmann::json::parse(status->body, nullptr, false);
  if (st.is_discarded() || !st.is_object()) {
    std::cerr << "p2pnode status: the daemon's answer is not JSON\n";
    return kUsage;
  }
  const bool ready = st.value("ready", false);
  if (o.json) {
    auto findings = client.Get("/v1/findings");
    nlohmann::json out = {{"status", st}};
    if (findings && findings->status == 200) out["findings"] = nlohmann::json::parse(findings->body, nullptr, false);
    std::cout << out.dump(2) << "\n";
    return ready ? kOk : kFindings;
  }
  auto table = client.Get("/v1/findings", {{"Accept", "text/plain"}});
  if (table && table->status == 200) std::cout << table->body;
  std::cout << "\nnode state: " << st.value("state", "?");
  if (st.contains("selftest") && st["selftest"].is_object())
    std::cout << ", self-test " << st["selftest"].value("verdict", "?");
  std::cout << "\n";
  if (st.contains("selftest_note") && st["selftest_note"].is_string())
    std::cout << st["selftest_note"].get<std::string>() << "\n";
  // Issue 13: one line per NVMe drive, GPU and doorbell writer.
  if (st.contains("nvme_doorbell") && st["nvme_doorbell"].is_object() && st["nvme_doorbell"].contains("lines") &&
      st["nvme_doorbell"]["lines"].is_array())
    for (const auto& l : st["nvme_doorbell"]["lines"])
      if (l.is_string()) std::cout << "NVMe doorbell: " << l.get<std::string>() << "\n";
  if (st.contains("reasons") && st["reasons"].is_array())
    for (const auto& r : st["reasons"])
      if (r.is_string()) std::cout << "  - " << r.get<std::string>() << "\n";
  if (st.contains("selftest") && st["selftest"].is_object())
    std::cout << engine::expectations_table(st["selftest"].value("expectations", nlohmann::json::array()));
  return ready ? kOk : kFindings;
}
}  // namespace

void register_status(CLI::App& app) {
  auto o = std::make_shared<StatusOptions>();
  auto* cmd = app.add_subcommand("status", "Ask a running daemon: the check report, the node state and why");
  cmd->add_option("--url", o->url,
                  "The daemon's address (default: from the configuration's listen, https:// when it sets tls; "
                  "http://127.0.0.1:9470 without a configuration)");
  cmd->add_option("--config", o->config, "The daemon's configuration (default ROOT/etc/p2pnode/p2pnode.yaml, when present)");
  cmd->add_option("--root", o->root, "Treat DIR as the filesystem root for the configuration's paths")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--cacert", o->cacert,
                  "Over https, trust the CA certificates in this PEM file (default: the configuration's tls.cert_file, "
                  "so a self-signed certificate verifies; the system's CA store without tls in the configuration)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--json", o->json, "Print /v1/status and /v1/findings as one JSON document");
  cmd->add_option("--timeout", o->timeout_s, "Seconds to wait for the daemon")->check(CLI::Range(1, 300));
  cmd->callback([o] { throw CLI::RuntimeError(run_status(*o)); });
}

}  // namespace p2pnode::cli
