// The remediation ladder on a recorded H200 box, at the CommandRunner seam: a lost P2P path climbs
// the rungs the profile allows in order (the GPU reset and the reboot are the commands a scripted
// runner records), a self-test after each, the record stored before every rung; after a "power cut"
// the stored state resumes without taking a rung twice, and only a passing self-test ends it.
#include "engine/remediate.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/metrics.hpp"
#include "engine/views.hpp"
#include "unit/source_files.hpp"
#include "unit/temp_dir.hpp"

using namespace p2pnode;
using namespace p2pnode::engine;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
using namespace p2pnode::test_files;

const char* kLadderProfile = R"(apiVersion: p2pnode/v1
kind: NodeProfile
metadata: {name: h200-ladder}
match:
  gpus: {vendor: 0x10de, devices: [0x2335]}
selftest:
  when: idle
  thresholds: {min_bandwidth: {any: 300GB/s}}
remediation:
  rungs: [wait_idle, reset_gpu, reboot]
  reboot_window: 24h
)";

const char* kLost = "health.recovery 0000:00:05.0: the driver asks for peer traffic to stop (drain_p2p)";

// A private copy of the recorded H200 box with the ladder profile, and the runners' script.
class LadderOnTheBox : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_ / "root";
    fs::copy(kSrc / "tests/fixtures/h200-4gpu", dir_, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    fs::create_directories(dir_ / "etc/p2pnode/profiles");
    std::ofstream(dir_ / "etc/p2pnode/profiles/ladder.yaml") << kLadderProfile;
    root_ = std::make_unique<sys::SysRoot>(dir_);
    agent_ = host_paths(config_, *root_).agent_path.string();
    config_.apply = false;
    runner_.on({agent_}, [this](const sys::Command&) {
      json d = p2pnode::test_files::nv18_run();
      if (!p2p_works_) {
        d["summary"]["integrity_bad_bytes"] = 4096;  // a pair that no longer copies right
      }
      return sys::exited_with(0, d.dump());
    });
    runner_.on({agent_, "--processes"}, [this](const sys::Command&) {
      json p = {{"kind", "gpu_processes"}, {"schema_version", 1}, {"source", "nvml"}, {"processes", json::array()}};
      if (job_running_) { p["processes"].push_back({{"gpu", "0000:00:05.0"}, {"pid", 4242}, {"name", "train.py"}}); }
      return sys::exited_with(0, p.dump());
    });
    runner_.on({"nvidia-smi", "--gpu-reset"}, sys::exited_with(0, "GPU reset done"));
    runner_.on({"systemctl", "reboot"}, sys::exited_with(0));
  }

  // One reconcile pass as the engine runs it; every mid-pass store is kept.
  void pass(RecordedState& st, std::vector<std::string> lost = {}) {
    PassContext ctx{*root_, runner_, runner_, config_, nullptr, "health", false, false, nullptr, {}};
    ctx.lost_p2p = std::move(lost);
    ctx.persist = [this](const RecordedState& mid) { stored_.push_back(to_json(mid)); };
    reconcile_pass(ctx, st);
  }
  std::vector<std::vector<std::string>> calls(const std::string& program) const {
    std::vector<std::vector<std::string>> out;
    for (const auto& c : runner_.calls()) {
      if (!c.empty() && c[0] == program) { out.push_back(c); }
    }
    return out;
  }

  p2pnode::test::TempDir tmp_{"ladder"};
  fs::path dir_;
  std::unique_ptr<sys::SysRoot> root_;
  DaemonConfig config_;
  std::string agent_;
  sys::ScriptedRunner runner_;
  bool p2p_works_ = false, job_running_ = false;
  std::vector<json> stored_;
};

bool has_reason(const RecordedState& st, const std::string& start) {
  for (const auto& r : st.reasons) {
    if (r.rfind(start, 0) == 0) { return true; }
  }
  return false;
}
}  // namespace

TEST_F(LadderOnTheBox, ClimbsInOrderStoresEachRungFirstAndResumesAfterAPowerCut) {
  RecordedState st;
  st.state = NodeState::ready;  // a ready node loses P2P
  pass(st, {kLost});
  // wait_idle, its self-test failed; reset_gpu on every GPU, its self-test failed; the reboot.
  const auto resets = calls("nvidia-smi");
  std::vector<std::vector<std::string>> reset_calls;
  for (const auto& c : resets) {
    if (c.size() > 1 && c[1] == "--gpu-reset") { reset_calls.push_back(c); }
  }
  ASSERT_EQ(reset_calls.size(), 4u);
  EXPECT_EQ(reset_calls[0], (std::vector<std::string>{"nvidia-smi", "--gpu-reset", "-i", "0000:00:06.0"}));
  ASSERT_EQ(calls("systemctl").size(), 1u);
  EXPECT_EQ(calls("systemctl")[0], (std::vector<std::string>{"systemctl", "reboot"}));
  // Each rung was stored before it ran (the store before the reset already names it) and again with
  // its outcome, before the self-test after it (the reboot's outcome is the next boot); every store
  // takes the node out of readiness and says why, first.
  ASSERT_EQ(stored_.size(), 5u);
  EXPECT_EQ(stored_[0]["remediation"]["taken"], "wait_idle");
  EXPECT_EQ(stored_[1]["remediation"]["history"][0]["outcome"], "done: the GPUs are idle");
  EXPECT_EQ(stored_[2]["remediation"]["taken"], "reset_gpu");
  EXPECT_EQ(stored_[2]["remediation"]["history"].size(), 2u);
  EXPECT_EQ(stored_[2]["remediation"]["history"][1]["outcome"], "taken");
  EXPECT_EQ(stored_[3]["remediation"]["history"][1]["outcome"], "done");
  EXPECT_EQ(stored_[4]["remediation"]["taken"], "reboot");
  for (const auto& s : stored_) {
    EXPECT_EQ(s["state"], "degraded") << s["state"];
    ASSERT_FALSE(s["reasons"].empty());
    EXPECT_EQ(s["reasons"][0].get<std::string>().rfind("remediation: taking ", 0), 0u) << s["reasons"];
    std::size_t ladder_reasons = 0;
    for (const auto& r : s["reasons"]) { ladder_reasons += r.get<std::string>().rfind("remediation: ", 0) == 0; }
    EXPECT_EQ(ladder_reasons, 1u) << s["reasons"];
  }
  ASSERT_EQ(st.remediation.history.size(), 3u);
  EXPECT_EQ(st.remediation.history[0].before, kLost);
  EXPECT_EQ(st.remediation.history[0].after.rfind("failed", 0), 0u) << st.remediation.history[0].after;
  EXPECT_EQ(st.remediation.history[1].outcome, "done");
  EXPECT_EQ(st.remediation.history[2].outcome, "done: reboot requested");
  EXPECT_EQ(st.remediation_rungs["reset_gpu"], 1u);
  EXPECT_TRUE(has_reason(st, "remediation: taking reboot")) << json(st.reasons).dump();

  // The power goes; the box boots with P2P back. The stored record resumes: the self-test the
  // reboot wanted runs, passes, and the ladder ends without taking any rung again.
  auto loaded = state_from_json(stored_.back());
  ASSERT_TRUE(loaded) << loaded.error().message;
  RecordedState after = std::move(loaded).value();
  p2p_works_ = true;
  const auto before = runner_.calls().size();
  pass(after);
  EXPECT_FALSE(after.remediation.active);
  EXPECT_EQ(after.remediation_ladders["recovered"], 1u);
  EXPECT_EQ(after.remediation.history.back().after, "passed");
  EXPECT_EQ(after.selftest->verdict, "passed");
  EXPECT_FALSE(has_reason(after, "remediation")) << json(after.reasons).dump();
  for (std::size_t i = before; i < runner_.calls().size(); ++i) {
    EXPECT_TRUE(runner_.calls()[i][0] != "systemctl" && runner_.calls()[i][1] != "--gpu-reset")
        << runner_.calls()[i][0];
  }

  // In /v1/status and /metrics.
  after.profile_remediation = true;
  const json status = status_body(after, Runtime{});
  EXPECT_EQ(status["remediation"]["active"], false);
  EXPECT_EQ(status["remediation"]["history"].size(), 3u);
  EXPECT_EQ(status["remediation"]["ladders"]["recovered"], 1);
  const std::string metrics = render_metrics(after, Runtime{});
  EXPECT_NE(metrics.find("p2pnode_remediation_rungs_total{rung=\"reset_gpu\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("p2pnode_remediation_ladders_total{outcome=\"recovered\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("p2pnode_remediation_active 0"), std::string::npos);
}

TEST_F(LadderOnTheBox, NothingWhileAJobRunsAndAPersonAfterTheLastRung) {
  RecordedState st;
  job_running_ = true;
  pass(st, {kLost});
  // A job on the GPUs: no rung, no reset, no self-test; the node says why.
  EXPECT_TRUE(st.remediation.active);
  EXPECT_EQ(st.remediation.next, 0u);
  EXPECT_TRUE(calls("systemctl").empty());
  EXPECT_TRUE(has_reason(st, "remediation: wait_idle waits for idle GPUs (never while a job runs)"))
      << json(st.reasons).dump();
  // The job ends; every rung is taken and P2P stays lost.
  job_running_ = false;
  pass(st, {kLost});
  ASSERT_EQ(calls("systemctl").size(), 1u);
  pass(st, {kLost});  // after the reboot: its self-test fails again
  EXPECT_TRUE(st.remediation.service_required);
  EXPECT_EQ(st.state, NodeState::failed);  // the failed self-test, and the person's turn beside it
  EXPECT_TRUE(has_reason(st, "remediation: service required: every rung the profile allows was taken"))
      << json(st.reasons).dump();
  EXPECT_EQ(st.remediation_ladders["service_required"], 1u);
  // It never loops: more passes take nothing.
  pass(st, {kLost});
  pass(st, {kLost});
  EXPECT_EQ(calls("systemctl").size(), 1u);
  EXPECT_EQ(st.remediation_ladders["service_required"], 1u);
}

TEST_F(LadderOnTheBox, OffUnlessTheProfileAsksForIt) {
  std::ofstream(dir_ / "etc/p2pnode/profiles/ladder.yaml")
      << std::string(kLadderProfile).substr(0, std::string(kLadderProfile).find("remediation:"));
  RecordedState st;
  pass(st, {kLost});
  EXPECT_FALSE(st.remediation.active);
  EXPECT_TRUE(calls("systemctl").empty());
  EXPECT_TRUE(calls("nvidia-smi").size() == 0 || calls("nvidia-smi")[0][1] != "--gpu-reset");
  EXPECT_EQ(status_body(st, Runtime{})["remediation"], nullptr);
}
