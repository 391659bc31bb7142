// `p2pnode status`: asks a running daemon and prints the same report as `check`, then the
// node state and its reasons.
#include <httplib.h>

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"

namespace p2pnode::cli {

namespace {
struct StatusOptions {
  std::string url = "http://127.0.0.1:9470";
  bool json = false;
  int timeout_s = 10;
};

int run_status(const StatusOptions& o) {
  httplib::Client client(o.url);
  client.set_connection_timeout(o.timeout_s, 0);
  client.set_read_timeout(o.timeout_s, 0);
  auto status = client.Get("/v1/status");
  if (!status) {
    std::cerr << "p2pnode status: cannot reach the daemon at " << o.url << ": " << httplib::to_string(status.error()) << "\n";
    return kUsage;
  }
  if (status->status != 200) {
    std::cerr << "p2pnode status: " << o.url << "/v1/status answered " << status->status << ": " << status->body << "\n";
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
  if (st.contains("reasons") && st["reasons"].is_array())
    for (const auto& r : st["reasons"])
      if (r.is_string()) std::cout << "  - " << r.get<std::string>() << "\n";
  return ready ? kOk : kFindings;
}
}  // namespace

void register_status(CLI::App& app) {
  auto o = std::make_shared<StatusOptions>();
  auto* cmd = app.add_subcommand("status", "Ask a running daemon: the check report, the node state and why");
  cmd->add_option("--url", o->url, "The daemon's address (default http://127.0.0.1:9470)");
  cmd->add_flag("--json", o->json, "Print /v1/status and /v1/findings as one JSON document");
  cmd->add_option("--timeout", o->timeout_s, "Seconds to wait for the daemon")->check(CLI::Range(1, 300));
  cmd->callback([o] { throw CLI::RuntimeError(run_status(*o)); });
}

}  // namespace p2pnode::cli
