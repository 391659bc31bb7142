// `p2pnode selftest judge`: the daemon's judge over recorded agent results, in order, as if each
// were the daemon's next self-test: verdict, measured versus expected, the node's baseline and
// its regressions. The baseline is kept in --state (the daemon's state file format), so a
// sequence can span several calls, as the daemon's spans restarts.
// `p2pnode selftest run [--force]`: asks the running daemon for a self-test now (POST /v1/selftest
// with its token) and, with --wait, prints what became of it: run, skipped (busy GPUs), contended.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "cli/commands.hpp"
#include "cli/daemon_client.hpp"
#include "core/json_text.hpp"
#include "engine/selftest.hpp"
#include "engine/state.hpp"
#include "engine/views.hpp"
#include "judge/contention.hpp"
#include "judge/verdict.hpp"
#include "probe/probe.hpp"
#include "sys/private_file.hpp"

namespace p2pnode::cli {

namespace {
struct JudgeOptions {
  ProfileChoice choice;
  std::string state_file;
  std::vector<std::string> results;
  bool json = false;
};

int run_judge(const JudgeOptions& o) {
  const sys::SysRoot root(o.choice.root);
  const Inventory inv = probe::probe_inventory(root);
  auto profile = choose_profile(o.choice, inv);
  if (!profile) { return kUsage; }
  const SelftestSpec spec = profile->selftest.value_or(SelftestSpec{});
  const sys::SysRoot fs_root("/");
  std::optional<engine::StateStore> store;
  engine::RecordedState st;
  if (!o.state_file.empty()) {
    store.emplace(fs_root, std::filesystem::absolute(o.state_file).string());
    auto loaded = store->load();
    if (loaded.loaded) {
      st = std::move(loaded.state);
    } else {
      std::cerr << "p2pnode selftest judge: state " << loaded.problem << "\n";
    }
  }
  bool all_good = true;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& file : o.results) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    judge::AgentRun run;
    if (!in) {
      run.judgement = {"error", {"cannot read " + file}};
    } else if (auto r = judge::parse_agent_result(text.str()); !r) {
      run.judgement = {"error", {r.error().message}};
    } else {
      run.judgement = judge::judge_agent_result(*r, spec, inv);
      run.duration_s = r->duration_s;
      run.result = std::move(r).value();
    }
    // A run made beside another job (the agent's own samples name it) is shown, not judged.
    const judge::Contention contention =
        run.result ? judge::contention_in(run.result->raw, spec.ignore_processes) : judge::Contention{};
    const auto notes = engine::record_selftest(st, run, spec, inv, "judge " + file, contention);
    const auto& rec = notes.contended ? *st.selftest_contended : *st.selftest;
    all_good &= (rec.verdict == "passed" || rec.verdict == "contended") && rec.warnings.empty();
    if (o.json) {
      out.push_back({{"file", file},
                     {"verdict", rec.verdict},
                     {"reasons", rec.reasons},
                     {"warnings", rec.warnings},
                     {"baseline_reset", notes.baseline_reset},
                     {"expectations", rec.expectations},
                     {"contention", rec.contention}});
      continue;
    }
    std::cout << file << ": " << rec.verdict << (rec.warnings.empty() ? "" : ", regressed") << "\n";
    if (!notes.baseline_reset.empty()) { std::cout << "  baseline reset: " << notes.baseline_reset << "\n"; }
    for (const auto& r : rec.reasons) { std::cout << "  - " << r << "\n"; }
    for (const auto& w : rec.warnings) { std::cout << "  ! regression: " << w << "\n"; }
    std::cout << engine::expectations_table(rec.expectations);
  }
  if (o.json) { std::cout << json_text(out, 1) << "\n"; }
  if (store) {
    if (auto s = store->save(st); !s) {
      std::cerr << "p2pnode selftest judge: cannot write the state " << store->path() << ": " << s.error().message
                << "\n";
      return kUsage;
    }
  }
  return all_good ? kOk : kFindings;
}
struct RunOptions : DaemonClientOptions {
  bool force = false;
  bool wait = false;
};

int run_request(const RunOptions& o) {
  const std::string who = "p2pnode selftest run";
  auto target = resolve_target(o, who);
  if (!target) { return kUsage; }
  auto secret = sys::read_private_file(target->token_file, "token file", 4096);
  if (!secret) {
    std::cerr << who << ": " << secret.error().message << " (the daemon's token; run as root)\n";
    return kUsage;
  }
  std::string token = secret->substr(0, secret->find('\n'));
  httplib::Client client(target->url);
  if (!client.is_valid()) {
    std::cerr << who << ": cannot use the URL " << target->url << "\n";
    return kUsage;
  }
  set_trust(client, *target);
  client.set_connection_timeout(o.timeout_s, 0);
  client.set_read_timeout(o.timeout_s, 0);
  auto last_pass = [&]() -> std::optional<nlohmann::json> {
    auto r = client.Get("/v1/status");
    if (!r || r->status != 200) { return std::nullopt; }
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded()) { return std::nullopt; }
    return j;
  };
  const auto before = last_pass();
  const auto passes = [](const nlohmann::json& st) {
    std::uint64_t n = 0;
    const auto rec = st.find("reconcile");
    if (rec == st.end() || !rec->is_object() || !rec->contains("runs") || !(*rec)["runs"].is_object()) { return n; }
    for (const auto& v : (*rec)["runs"]) {
      if (v.is_number_unsigned()) { n += v.get<std::uint64_t>(); }
    }
    return n;
  };
  const httplib::Headers auth = {{"Authorization", "Bearer " + token}};
  auto r = client.Post("/v1/selftest", auth, o.force ? R"({"force": true})" : "", "application/json");
  if (!r) {
    std::cerr << who << ": cannot reach the daemon at " << target->url << ": " << httplib::to_string(r.error())
              << connect_hint(client, *target, r.error()) << "\n";
    return kUsage;
  }
  if (r->status != 202) {
    std::cerr << who << ": the daemon answered " << r->status << ": " << r->body << "\n";
    return kUsage;
  }
  std::cout << "requested" << (o.force ? " (force: even beside other jobs)" : "") << ": " << r->body << "\n";
  if (!o.wait || !before) { return kOk; }
  // The pass counter moves when the pass that carries the request is recorded.
  const std::uint64_t n0 = passes(*before);
  for (int i = 0; i < o.timeout_s * 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto st = last_pass();
    if (!st || passes(*st) == n0 || (*st)["reconcile"].value("running", false) ||
        (*st)["reconcile"].value("queued", false)) {
      continue;
    }
    if ((*st)["selftest_note"].is_string()) {
      std::cout << (*st)["selftest_note"].get<std::string>() << "\n";
      return (*st)["selftest_note"].get<std::string>().rfind("self-test skipped", 0) == 0 ? kFindings : kOk;
    }
    const auto& t = (*st)["selftest"];
    if (!t.is_object()) {  // nothing ran and nothing was recorded as skipped: say what the node says
      std::string why;
      for (const auto& reason : (*st)["reasons"]) {
        if (reason.is_string()) { why += (why.empty() ? "" : "; ") + reason.get<std::string>(); }
      }
      std::cout << "no self-test ran: the node is " << (*st).value("state", "?") << (why.empty() ? "" : ": " + why)
                << "\n";
      return kFindings;
    }
    std::cout << "self-test " << t.value("verdict", "?") << "\n";
    return t.value("verdict", "") == "passed" ? kOk : kFindings;
  }
  std::cerr << who << ": no result within " << o.timeout_s << " s (the self-test may still be running)\n";
  return kFindings;
}
}  // namespace

void register_selftest(CLI::App& app) {
  auto o = std::make_shared<JudgeOptions>();
  auto* cmd = app.add_subcommand("selftest", "Self-test results");
  cmd->require_subcommand(1);
  auto* judge = cmd->add_subcommand("judge",
                                    "Judge recorded p2pnode-agent results in order as the daemon would: verdict, "
                                    "expected bandwidth, baseline regressions");
  add_profile_options(*judge, o->choice);
  judge->add_option("--state", o->state_file,
                    "Keep the baseline in this state file (read first when present, written after)");
  judge->add_flag("--json", o->json, "Print one JSON document");
  judge->add_option("results", o->results, "Agent JSON documents, oldest first")->required();
  judge->callback([o] { throw CLI::RuntimeError(run_judge(*o)); });

  auto r = std::make_shared<RunOptions>();
  r->timeout_s = 600;
  auto* run = cmd->add_subcommand(
      "run", "Ask the running daemon for a self-test now (POST /v1/selftest; needs the token file)");
  run->add_flag("--force", r->force, "Run even while other processes use the GPUs (the run is then marked contended)");
  run->add_flag("--wait", r->wait, "Wait for the pass and print what became of it: its verdict, or why it was skipped");
  run->add_option("--url", r->url, "The daemon's address (default: from its configuration)");
  run->add_option("--config", r->config, "The daemon's configuration (default ROOT/etc/p2pnode/p2pnode.yaml)");
  run->add_option("--root", r->root, "Treat DIR as the filesystem root for the configuration's paths")
      ->check(CLI::ExistingDirectory);
  run->add_option("--cacert", r->cacert, "Over https, trust the CA certificates in this PEM file")
      ->check(CLI::ExistingFile);
  run->add_option("--timeout", r->timeout_s, "Seconds to wait (with --wait, for the self-test too)")
      ->check(CLI::Range(1, 3600));
  run->callback([r] { throw CLI::RuntimeError(run_request(*r)); });
}

}  // namespace p2pnode::cli
