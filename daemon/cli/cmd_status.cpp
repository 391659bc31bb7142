// `p2pnode status`: asks a running daemon and prints the same report as `check`, then the
// node state and its reasons. It finds the daemon, and over HTTPS the certificate to trust, in
// the daemon's own configuration.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/daemon_client.hpp"
#include "core/json_text.hpp"
#include "engine/views.hpp"

namespace p2pnode::cli {

namespace {
struct StatusOptions : DaemonClientOptions {
  bool json = false;
};

int run_status(const StatusOptions& o) {
  auto target = resolve_target(o, "p2pnode status");
  if (!target) { return kUsage; }
  httplib::Client client(target->url);
  if (!client.is_valid()) {
    std::cerr << "p2pnode status: cannot use the URL " << target->url
              << "; expected http://HOST:PORT or https://HOST:PORT\n";
    return kUsage;
  }
  set_trust(client, *target);
  client.set_connection_timeout(o.timeout_s, 0);
  client.set_read_timeout(o.timeout_s, 0);
  auto status = client.Get("/v1/status");
  if (!status) {
    std::cerr << "p2pnode status: cannot reach the daemon at " << target->url << ": "
              << httplib::to_string(status.error()) << connect_hint(client, *target, status.error()) << "\n";
    return kUsage;
  }
  if (status->status != 200) {
    std::cerr << "p2pnode status: " << target->url << "/v1/status answered " << status->status << ": " << status->body
              << "\n";
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
    if (findings && findings->status == 200) {
      out["findings"] = nlohmann::json::parse(findings->body, nullptr, false);
    }
    std::cout << json_text(out, 2) << "\n";
    return ready ? kOk : kFindings;
  }
  auto table = client.Get("/v1/findings", {{"Accept", "text/plain"}});
  if (table && table->status == 200) { std::cout << table->body; }
  std::cout << "\nnode state: " << st.value("state", "?");
  if (st.contains("selftest") && st["selftest"].is_object()) {
    std::cout << ", self-test " << st["selftest"].value("verdict", "?");
  }
  std::cout << "\n";
  if (st.contains("selftest_note") && st["selftest_note"].is_string()) {
    std::cout << st["selftest_note"].get<std::string>() << "\n";
  }
  // One line per NVMe drive, GPU and doorbell writer.
  if (st.contains("nvme_doorbell") && st["nvme_doorbell"].is_object() && st["nvme_doorbell"].contains("lines") &&
      st["nvme_doorbell"]["lines"].is_array()) {
    for (const auto& l : st["nvme_doorbell"]["lines"]) {
      if (l.is_string()) { std::cout << "NVMe doorbell: " << l.get<std::string>() << "\n"; }
    }
  }
  if (st.contains("reasons") && st["reasons"].is_array()) {
    for (const auto& r : st["reasons"]) {
      if (r.is_string()) { std::cout << "  - " << r.get<std::string>() << "\n"; }
    }
  }
  if (st.contains("selftest") && st["selftest"].is_object()) {
    std::cout << engine::expectations_table(st["selftest"].value("expectations", nlohmann::json::array()));
  }
  // The passive health pass: reported beside the state, never part of it.
  if (st.contains("health") && st["health"].is_object() && st["health"].contains("findings") &&
      st["health"]["findings"].is_array() && !st["health"]["findings"].empty()) {
    std::cout << "health (GET /v1/health):\n";
    for (const auto& l : st["health"]["findings"]) {
      if (l.is_string()) { std::cout << "  " << l.get<std::string>() << "\n"; }
    }
  }
  return ready ? kOk : kFindings;
}
}  // namespace

void register_status(CLI::App& app) {
  auto o = std::make_shared<StatusOptions>();
  auto* cmd = app.add_subcommand("status", "Ask a running daemon: the check report, the node state and why");
  cmd->add_option("--url", o->url,
                  "The daemon's address (default: from the configuration's listen, https:// when it sets tls; "
                  "http://127.0.0.1:9470 without a configuration)");
  cmd->add_option("--config", o->config,
                  "The daemon's configuration (default ROOT/etc/p2pnode/p2pnode.yaml, when present)");
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
