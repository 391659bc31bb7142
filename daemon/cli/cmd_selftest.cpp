// `p2pnode selftest judge`: the daemon's judge over recorded agent results, in order, as if each
// were the daemon's next self-test: verdict, measured versus expected, the node's baseline and
// its regressions. The baseline is kept in --state (the daemon's state file format), so a
// sequence can span several calls, as the daemon's spans restarts.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "judge/contention.hpp"
#include "judge/verdict.hpp"
#include "engine/selftest.hpp"
#include "engine/state.hpp"
#include "engine/views.hpp"
#include "probe/probe.hpp"

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
  if (!profile) return kUsage;
  const SelftestSpec spec = profile->selftest.value_or(SelftestSpec{});
  const sys::SysRoot fs_root("/");
  std::optional<engine::StateStore> store;
  engine::RecordedState st;
  if (!o.state_file.empty()) {
    store.emplace(fs_root, std::filesystem::absolute(o.state_file).string());
    auto loaded = store->load();
    if (loaded.loaded) st = std::move(loaded.state);
    else std::cerr << "p2pnode selftest judge: state " << loaded.problem << "\n";
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
      out.push_back({{"file", file}, {"verdict", rec.verdict}, {"reasons", rec.reasons}, {"warnings", rec.warnings},
                     {"baseline_reset", notes.baseline_reset}, {"expectations", rec.expectations},
                     {"contention", rec.contention}});
      continue;
    }
    std::cout << file << ": " << rec.verdict << (rec.warnings.empty() ? "" : ", regressed") << "\n";
    if (!notes.baseline_reset.empty()) std::cout << "  baseline reset: " << notes.baseline_reset << "\n";
    for (const auto& r : rec.reasons) std::cout << "  - " << r << "\n";
    for (const auto& w : rec.warnings) std::cout << "  ! regression: " << w << "\n";
    std::cout << engine::expectations_table(rec.expectations);
  }
  if (o.json) std::cout << out.dump(1) << "\n";
  if (store) {
    if (auto s = store->save(st); !s) {
      std::cerr << "p2pnode selftest judge: cannot write the state " << store->path() << ": " << s.error().message << "\n";
      return kUsage;
    }
  }
  return all_good ? kOk : kFindings;
}
}  // namespace

void register_selftest(CLI::App& app) {
  auto o = std::make_shared<JudgeOptions>();
  auto* cmd = app.add_subcommand("selftest", "Self-test results");
  cmd->require_subcommand(1);
  auto* judge = cmd->add_subcommand(
      "judge", "Judge recorded p2pnode-agent results in order as the daemon would: verdict, expected bandwidth, baseline regressions");
  add_profile_options(*judge, o->choice);
  judge->add_option("--state", o->state_file,
                    "Keep the baseline in this state file (read first when present, written after)");
  judge->add_flag("--json", o->json, "Print one JSON document");
  judge->add_option("results", o->results, "Agent JSON documents, oldest first")->required();
  judge->callback([o] { throw CLI::RuntimeError(run_judge(*o)); });
}

}  // namespace p2pnode::cli
