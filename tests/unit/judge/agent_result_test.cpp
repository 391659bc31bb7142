// The agent's documents as the daemon reads them: recorded outputs from real H200 runs
// (tests/fixtures/gpu-runs), and the ways an agent can lie, hang, crash or print garbage.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "health/agent_health.hpp"
#include "judge/contention.hpp"
#include "judge/verdict.hpp"
#include "probe/agent_run.hpp"
#include "probe/probe.hpp"
#include "profile/loader.hpp"
#include "unit/source_files.hpp"
#include "unit/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;
using namespace p2pnode::judge;
using nlohmann::json;

namespace {
using namespace p2pnode::test_files;

std::string recorded(const char* name) { return slurp(kSrc / "tests/fixtures/gpu-runs" / name); }

const Inventory& h200_inventory() {
  static const Inventory inv = probe::probe_inventory(sys::SysRoot(kSrc / "tests/fixtures/h200-4gpu"));
  return inv;
}
SelftestSpec h200_spec() {
  auto r = profile::load_profile_file(kSrc / "profiles/h200-nvlink.yaml");
  EXPECT_TRUE(r.profile) << r.diagnostics.format();
  return *r.profile->selftest;
}
// What the daemon does: run the agent (probe), then judge its exit and document.
AgentRun run_and_judge(sys::CommandRunner& runner, const std::string& path, std::chrono::nanoseconds limit,
                       const SelftestSpec& spec, const Inventory& inv) {
  auto p = probe::run_agent(runner, path, {}, limit, kMaxAgentOutputBytes + 1);
  return judge_agent_run(std::move(p.process), p.started_unix, p.duration_s, path, limit, spec, inv);
}
}  // namespace

TEST(AgentParse, RecordedOutputsParse) {
  int n = 0;
  for (const auto& f : fs::recursive_directory_iterator(kSrc / "tests/fixtures/gpu-runs")) {
    if (f.path().extension() != ".json") { continue; }
    const std::string name = f.path().filename().string();
    if (name.size() > 9 && name.compare(name.size() - 9, 9, "-api.json") == 0) {
      continue;  // a daemon's API body
    }
    const std::string text = slurp(f.path());
    if (text.find("\"kind\": \"gpu_processes\"") != std::string::npos) {  // p2pnode-agent --processes
      auto a = parse_gpu_activity(text);
      EXPECT_TRUE(a.ok()) << f.path() << ": " << (a.ok() ? "" : a.error().message);
      continue;
    }
    if (text.find("\"kind\": \"health\"") != std::string::npos) {  // p2pnode-agent --health
      auto h = health::decode_agent_health(text);
      EXPECT_TRUE(h.ok()) << f.path() << ": " << (h.ok() ? "" : h.error().message);
      continue;
    }
    auto r = parse_agent_result(text);
    EXPECT_TRUE(r.ok()) << f.path() << ": " << (r.ok() ? "" : r.error().message);
    ++n;
  }
  EXPECT_GE(n, 10);
}

TEST(AgentParse, ReadsMatricesFromA4GpuRun) {
  auto r = parse_agent_result(recorded("h200x4-rounds.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, "passed");
  ASSERT_EQ(r->devices.size(), 4u);
  EXPECT_EQ(r->devices[0].pci_bus_id, "0000:00:06.0");
  ASSERT_EQ(r->cases.size(), 9u);
  const auto& write = r->cases[1];
  EXPECT_EQ(write.key, "ce_write_bandwidth");
  ASSERT_EQ(write.cells.size(), 12u);
  EXPECT_GT(*write.cells[0].bandwidth_gbps, 390.0);
  EXPECT_EQ(r->integrity_bad_bytes, 0u);
}

TEST(AgentJudge, HealthyRunPasses) {
  auto r = parse_agent_result(recorded("h200x4-rounds.json"));
  ASSERT_TRUE(r.ok());
  auto j = judge_agent_result(*r, h200_spec(), h200_inventory());
  EXPECT_EQ(j.verdict, "passed");
  EXPECT_TRUE(j.reasons.empty()) << j.reasons.front();
}

TEST(AgentJudge, CorruptionFails) {
  auto r = parse_agent_result(recorded("h200x4-inject.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto j = judge_agent_result(*r, h200_spec(), h200_inventory());
  EXPECT_EQ(j.verdict, "failed");
  bool integrity = false;
  for (const auto& s : j.reasons) { integrity |= s.find("integrity") != std::string::npos; }
  EXPECT_TRUE(integrity);
}

TEST(AgentJudge, SlowPairsAreBelowThresholdWithTheirClass) {
  auto r = parse_agent_result(recorded("h200x4-rounds.json"));
  ASSERT_TRUE(r.ok());
  SelftestSpec spec = h200_spec();
  spec.min_bandwidth.clear();
  spec.min_bandwidth["any"] = Bandwidth{500e9};
  spec.max_latency = std::chrono::nanoseconds(500);
  auto j = judge_agent_result(*r, spec, h200_inventory());
  EXPECT_EQ(j.verdict, "below_threshold");
  ASSERT_FALSE(j.reasons.empty());
  EXPECT_NE(j.reasons.front().find("0000:00:06.0"), std::string::npos) << j.reasons.front();
  bool latency = false;
  for (const auto& s : j.reasons) { latency |= s.rfind("latency", 0) == 0; }
  EXPECT_TRUE(latency);
}

TEST(AgentJudge, AllWaivedIsNotAPass) {
  auto r = parse_agent_result(recorded("h200x4-budget.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto j = judge_agent_result(*r, h200_spec(), h200_inventory());
  if (r->cases_passed == 0) { EXPECT_EQ(j.verdict, "below_threshold"); }
}

TEST(AgentParse, GarbageAndTruncation) {
  const std::string good = recorded("h200x2-default-2.json");
  ASSERT_TRUE(parse_agent_result(good).ok());
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, good.size() / 3, good.size() / 2, good.size() - 2}) {
    auto r = parse_agent_result(good.substr(0, cut));
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
  EXPECT_FALSE(parse_agent_result("Segmentation fault (core dumped)\n").ok());
  EXPECT_FALSE(parse_agent_result("\x01\x02\xff\xfe").ok());
  EXPECT_FALSE(parse_agent_result("[]").ok());
  EXPECT_FALSE(parse_agent_result("null").ok());
  EXPECT_FALSE(parse_agent_result(std::string(200000, '[')).ok());  // would recurse deeply
  EXPECT_FALSE(parse_agent_result(std::string(kMaxAgentOutputBytes + 1, ' ')).ok());
}

TEST(AgentParse, LiesAreCaught) {
  const json good = json::parse(recorded("h200x4-rounds.json"));
  auto expect_rejected = [&](const char* what, auto mutate) {
    json j = good;
    mutate(j);
    auto r = parse_agent_result(j.dump());
    EXPECT_FALSE(r.ok()) << what;
    if (!r.ok()) { EXPECT_NE(r.error().message.find("not valid"), std::string::npos) << r.error().message; }
  };
  expect_rejected("schema 2", [](json& j) { j["schema_version"] = 2; });
  expect_rejected("schema as string", [](json& j) { j["schema_version"] = "1"; });
  expect_rejected("passed with exit 1", [](json& j) { j["exit_code"] = 1; });
  expect_rejected("passed with failed cases", [](json& j) { j["summary"]["cases_failed"] = 2; });
  expect_rejected("src out of range", [](json& j) { j["cases"][1]["cells"][0]["src"] = 7; });
  expect_rejected("negative bandwidth", [](json& j) { j["cases"][1]["cells"][0]["bandwidth_gbps"]["median"] = -5; });
  expect_rejected("bandwidth as string",
                  [](json& j) { j["cases"][1]["cells"][0]["bandwidth_gbps"]["median"] = "fast"; });
  expect_rejected("unknown status", [](json& j) { j["status"] = "great"; });
  expect_rejected("no devices", [](json& j) { j.erase("devices"); });
  expect_rejected("bad integrity", [](json& j) { j["cases"][8]["cells"][0]["integrity"][0]["bad_bytes"] = -1; });
  expect_rejected("other program", [](json& j) { j["agent"]["name"] = "nvbandwidth"; });
}

TEST(AgentRunner, ProcessOutcomesAreVerdicts) {
  const auto spec = h200_spec();
  const auto& inv = h200_inventory();
  const std::string good = recorded("h200x4-rounds.json");
  sys::ScriptedRunner runner;
  runner.on({"/ok"}, sys::exited_with(0, good));
  runner.on({"/garbage"}, sys::exited_with(0, "hello"));
  runner.on({"/exitmismatch"}, sys::exited_with(1, good));
  runner.on({"/hang"}, [](const sys::Command&) {
    sys::CommandResult r;
    r.timed_out = true;
    return r;
  });
  runner.on({"/crash"}, [](const sys::Command&) {
    sys::CommandResult r;
    r.signal = 11;
    r.err = "Segmentation fault";
    return r;
  });
  auto run = [&](const char* path) { return run_and_judge(runner, path, std::chrono::seconds(5), spec, inv); };
  EXPECT_EQ(run("/ok").judgement.verdict, "passed");
  EXPECT_TRUE(run("/ok").result.has_value());
  auto g = run("/garbage");
  EXPECT_EQ(g.judgement.verdict, "error");
  EXPECT_NE(g.judgement.reasons.front().find("not valid JSON"), std::string::npos);
  EXPECT_EQ(run("/exitmismatch").judgement.verdict, "error");
  auto h = run("/hang");
  EXPECT_EQ(h.judgement.verdict, "error");
  EXPECT_NE(h.judgement.reasons.front().find("hung"), std::string::npos);
  auto c = run("/crash");
  EXPECT_EQ(c.judgement.verdict, "error");
  EXPECT_NE(c.judgement.reasons.front().find("crashed"), std::string::npos);
  ASSERT_FALSE(runner.calls().empty());
  EXPECT_EQ(runner.calls().front().at(1), "--json");
}

TEST(AgentRunner, RealProcessThatHangsIsKilled) {
  const p2pnode::test::TempDir scratch("hang");
  const fs::path script = scratch / "hang.sh";
  std::ofstream(script) << "#!/bin/sh\nsleep 30\n";
  fs::permissions(script, fs::perms::owner_all);
  sys::ProcessRunner runner;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_and_judge(runner, script.string(), std::chrono::milliseconds(300), h200_spec(), h200_inventory());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(r.judgement.verdict, "error");
}
