#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/state.hpp"
#include "engine/views.hpp"
#include "unit/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;
using namespace p2pnode::engine;

namespace {
struct StateRoot {
  p2pnode::test::TempDir tmp{"state"};
  fs::path dir = tmp.path();
};

RecordedState sample() {
  RecordedState s;
  s.state = NodeState::degraded;
  s.reasons = {"self-test: slow"};
  s.profile = "epyc-8x4090";
  s.trigger = "start";
  s.reconciled_unix = 1700000000;
  s.reconcile_duration_s = 1.5;
  s.findings = nlohmann::json::array({{{"check", "iommu.mode"}, {"severity", "ok"}}});
  s.selftest = SelftestRecord{"below_threshold", {"slow"}, "schedule", 1699999000, 42.5, {{"schema_version", 1}}};
  s.selftest_last_success_unix = 1690000000;
  s.selftest_last_success_duration_s = 40;
  s.reconcile_runs = {{"ready", 3}, {"degraded", 1}};
  s.selftest_runs = {{"passed", 2}};
  return s;
}
}  // namespace

TEST(StateStore, RoundTrips) {
  StateRoot t;
  sys::SysRoot root(t.dir);
  StateStore store(root, "/var/lib/p2pnode/state.json");
  ASSERT_TRUE(store.save(sample()).ok());
  auto loaded = store.load();
  ASSERT_TRUE(loaded.loaded) << loaded.problem;
  EXPECT_EQ(loaded.state.state, NodeState::degraded);
  EXPECT_EQ(loaded.state.profile, "epyc-8x4090");
  ASSERT_TRUE(loaded.state.selftest);
  EXPECT_EQ(loaded.state.selftest->verdict, "below_threshold");
  EXPECT_EQ(loaded.state.selftest->result["schema_version"], 1);
  EXPECT_EQ(loaded.state.selftest_last_success_unix, 1690000000);
  EXPECT_EQ(loaded.state.reconcile_runs.at("ready"), 3u);
  EXPECT_EQ(to_json(loaded.state), to_json(sample()));
}

TEST(StateStore, BytesThatAreNotUtf8AreSavedNotThrown) {
  // An NVMe serial, a hostname or a kernel-log line with any bytes (here an overlong NUL and 0xFF)
  // reached the state; nlohmann's default dump threw type_error 316 and took the daemon down.
  StateRoot t;
  sys::SysRoot root(t.dir);
  StateStore store(root, "/var/lib/p2pnode/state.json");
  RecordedState s = sample();
  s.reasons = {"nvme S\xC0\x80X: gone", "host node\xFF"};
  s.findings = nlohmann::json::array({{{"check", "nvme.binding"}, {"subject", "S\xC0\x80X"}}});
  ASSERT_TRUE(store.save(s).ok());
  auto loaded = store.load();
  ASSERT_TRUE(loaded.loaded) << loaded.problem;
  EXPECT_EQ(loaded.state.reasons.at(0), "nvme S\xEF\xBF\xBD\xEF\xBF\xBDX: gone");
  EXPECT_EQ(loaded.state.reasons.at(1), "host node\xEF\xBF\xBD");
  EXPECT_EQ(loaded.state.findings[0]["subject"], "S\xEF\xBF\xBD\xEF\xBF\xBDX");
}

TEST(StateStore, MissingIsReportedNotFatal) {
  StateRoot t;
  sys::SysRoot root(t.dir);
  auto loaded = StateStore(root, "/var/lib/p2pnode/state.json").load();
  EXPECT_FALSE(loaded.loaded);
  EXPECT_NE(loaded.problem.find("missing"), std::string::npos);
}

TEST(StateStore, CutInHalfIsReportedAndRebuilt) {
  StateRoot t;
  sys::SysRoot root(t.dir);
  StateStore store(root, "/var/lib/p2pnode/state.json");
  ASSERT_TRUE(store.save(sample()).ok());
  const fs::path file = t.dir / "var/lib/p2pnode/state.json";
  fs::resize_file(file, fs::file_size(file) / 2);
  auto loaded = store.load();
  EXPECT_FALSE(loaded.loaded);
  EXPECT_NE(loaded.problem.find("corrupt"), std::string::npos) << loaded.problem;
  ASSERT_TRUE(store.save(RecordedState{}).ok());  // rebuilt
  EXPECT_TRUE(store.load().loaded);
}

TEST(StateStore, WrongTypesAreCorrupt) {
  StateRoot t;
  sys::SysRoot root(t.dir);
  fs::create_directories(t.dir / "s");
  auto j = to_json(sample());
  for (auto mutate : std::vector<std::function<void(nlohmann::json&)>>{
           [](nlohmann::json& x) { x["state"] = "happy"; }, [](nlohmann::json& x) { x["reasons"] = "one"; },
           [](nlohmann::json& x) { x["schema_version"] = 99; },
           [](nlohmann::json& x) { x["reconcile_runs"]["ready"] = -1; }, [](nlohmann::json& x) { x.erase("selftest"); },
           [](nlohmann::json& x) { x["selftest"]["duration_s"] = "long"; }}) {
    auto copy = j;
    mutate(copy);
    std::ofstream(t.dir / "s/state.json") << copy.dump();
    auto loaded = StateStore(root, "/s/state.json").load();
    EXPECT_FALSE(loaded.loaded) << copy.dump();
    EXPECT_NE(loaded.problem.find("corrupt"), std::string::npos);
  }
  std::ofstream(t.dir / "s/state.json") << std::string(100000, '[');
  EXPECT_FALSE(StateStore(root, "/s/state.json").load().loaded);
}

TEST(NodeStateNames, RoundTrip) {
  for (int i = 0; i < 6; ++i) {
    const auto s = static_cast<NodeState>(i);
    EXPECT_EQ(node_state_from(to_string(s)), s);
  }
  EXPECT_GT(severity_rank(NodeState::failed), severity_rank(NodeState::blocked));
  EXPECT_GT(severity_rank(NodeState::degraded), severity_rank(NodeState::ready));
}

// GET /v1/plan is served without a token: the installer's log stays on the node.
TEST(PlanBody, LeavesTheInstallersLogOut) {
  RecordedState s;
  s.applied = nlohmann::json::array(
      {{{"action", "driver.userspace"},
        {"outcome", "failed"},
        {"after", {{"installer_exit", 1}, {"installer_log_tail", "ERROR: /home/op/secret-build ..."}}}},
       {{"action", "driver.module"}, {"after", {{"modules", {"nvidia"}}}}}});
  const auto body = p2pnode::engine::plan_body(s);
  ASSERT_EQ(body["applied"].size(), 2u);
  EXPECT_FALSE(body["applied"][0]["after"].contains("installer_log_tail")) << body.dump();
  EXPECT_EQ(body["applied"][0]["after"]["installer_exit"], 1);
  EXPECT_EQ(body["applied"][1]["after"]["modules"][0], "nvidia");
  EXPECT_EQ(s.applied[0]["after"].count("installer_log_tail"), 1u) << "the recorded state keeps it";
  EXPECT_EQ(body.dump().find("secret-build"), std::string::npos);
}
