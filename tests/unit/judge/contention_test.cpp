// judge/contention: the busy decision from NVML's list (or the device files' holders without it)
// and the scheduler; selftest.when; and who shared the GPUs during a run, from the agent's samples.
#include "judge/contention.hpp"

#include <gtest/gtest.h>

using namespace p2pnode;
using namespace p2pnode::judge;
using nlohmann::json;

namespace {
sys::CommandResult agent_said(const json& doc) {
  sys::CommandResult r;
  r.exited = true;
  r.exit_code = 0;
  r.out = doc.dump();
  return r;
}

json processes_doc(const json& processes, const std::string& source = "nvml") {
  return {{"schema_version", 1},
          {"kind", "gpu_processes"},
          {"agent", {{"name", "p2pnode-agent"}, {"version", "1"}}},
          {"source", source},
          {"reason", source == "nvml" ? json() : json("NVML not available")},
          {"gpus", json::array()},
          {"processes", processes}};
}

const json kCopyJob =
    json::array({{{"gpu", "0000:06:00.0"}, {"pid", 4242}, {"name", "python3"}, {"used_memory_bytes", 1717986918}},
                 {{"gpu", "0000:07:00.0"}, {"pid", 4242}, {"name", "python3"}, {"used_memory_bytes", 1717986918}}});
}  // namespace

TEST(Busy, NvmlProcessesMakeTheGpusBusyAndAreNamed) {
  const Busy b = judge_busy(agent_said(processes_doc(kCopyJob)), {}, std::nullopt, {});
  EXPECT_TRUE(b.busy);
  EXPECT_EQ(b.source, "nvml");
  ASSERT_EQ(b.processes.size(), 2u);
  ASSERT_EQ(b.reasons.size(), 1u);
  EXPECT_EQ(b.reasons[0],
            "compute processes on the GPUs (NVML): pid 4242 (python3, 1.60 GiB) on 0000:06:00.0, 0000:07:00.0");
}

TEST(Busy, IgnoredNamesAndAnIdleListAreNotBusy) {
  EXPECT_FALSE(judge_busy(agent_said(processes_doc(json::array())), {}, std::nullopt, {}).busy);
  EXPECT_FALSE(judge_busy(agent_said(processes_doc(kCopyJob)), {}, std::nullopt, {"python3"}).busy);
}

TEST(Busy, WithoutNvmlTheDeviceFileHoldersCountAndTheNoteSaysWhy) {
  const std::vector<GpuUser> holders = {{"", 99, "nvidia-persistenced", 0, "/dev/nvidiactl"},
                                        {"", 500, "trainer", 0, "/dev/nvidia0 /dev/nvidiactl"}};
  Busy b = judge_busy(agent_said(processes_doc(json::array(), "none")), holders, std::nullopt, {"nvidia-persistenced"});
  EXPECT_TRUE(b.busy);
  EXPECT_EQ(b.source, "device files");
  EXPECT_EQ(b.note, "NVML: NVML not available");
  ASSERT_EQ(b.processes.size(), 1u);
  EXPECT_EQ(b.reasons[0],
            "processes hold the GPUs' device files: pid 500 (trainer) holding /dev/nvidia0 /dev/nvidiactl");
  // An agent that does not know --processes (older) or prints garbage: the same fallback, said.
  sys::CommandResult old;
  old.exited = true;
  old.exit_code = 2;
  b = judge_busy(old, holders, std::nullopt, {"nvidia-persistenced"});
  EXPECT_TRUE(b.busy);
  EXPECT_EQ(b.note.rfind("p2pnode-agent --processes exit 2", 0), 0u) << b.note;
  b = judge_busy(agent_said({{"kind", "something else"}}), {}, std::nullopt, {});
  EXPECT_FALSE(b.busy);
  EXPECT_NE(b.note.find("kind: expected gpu_processes"), std::string::npos) << b.note;
}

TEST(Busy, TheSchedulerBusyOrUnreachableIsBusy) {
  const auto idle_gpus = agent_said(processes_doc(json::array()));
  Busy b = judge_busy(idle_gpus, {},
                      SchedulerView{true, true, "/usr/local/bin/node-busy exited 1: allocated to job 812"}, {});
  EXPECT_TRUE(b.busy);
  EXPECT_EQ(b.reasons[0],
            "the scheduler says the node is in use: /usr/local/bin/node-busy exited 1: allocated to job 812");
  b = judge_busy(idle_gpus, {}, SchedulerView{false, false, "timed out after 10 s"}, {});
  EXPECT_TRUE(b.busy);
  EXPECT_EQ(b.reasons[0], "the scheduler could not be asked: timed out after 10 s");
  EXPECT_FALSE(judge_busy(idle_gpus, {}, SchedulerView{true, false, "exited 0"}, {}).busy);
}

TEST(SelftestWhen, IdleSkipsABusyNodeUnlessForced) {
  Busy busy;
  busy.busy = true;
  busy.reasons = {"compute processes on the GPUs (NVML): pid 4242 (python3) on 0000:06:00.0"};
  auto d = decide_selftest(SelftestWhen::idle, false, busy);
  EXPECT_FALSE(d.run);
  EXPECT_NE(d.reason.find("pid 4242 (python3)"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("\"force\": true"), std::string::npos) << d.reason;
  EXPECT_TRUE(decide_selftest(SelftestWhen::idle, true, busy).run);
  EXPECT_TRUE(decide_selftest(SelftestWhen::idle, false, Busy{}).run);
  EXPECT_TRUE(decide_selftest(SelftestWhen::always, false, busy).run);
  d = decide_selftest(SelftestWhen::never, false, Busy{});
  EXPECT_FALSE(d.run);
  EXPECT_NE(d.reason.find("passive health only"), std::string::npos);
  EXPECT_TRUE(decide_selftest(SelftestWhen::never, true, Busy{}).run);
}

TEST(Contention, FromTheAgentsSamplesBeforeBetweenAndAfterCases) {
  json doc = {{"contention", {{"source", "nvml"}, {"reason", nullptr}, {"before", json::array()}, {"after", kCopyJob}}},
              {"cases", json::array({{{"key", "ce_write_bandwidth"}, {"foreign_processes", json::array()}},
                                     {{"key", "sm_read_bandwidth"}, {"foreign_processes", kCopyJob}}})}};
  Contention c = contention_in(doc, {});
  EXPECT_TRUE(c.contended);
  EXPECT_EQ(c.source, "nvml");
  EXPECT_EQ(c.processes.size(), 2u);  // one process, two GPUs
  EXPECT_EQ(c.seen_at, (std::vector<std::string>{"case sm_read_bandwidth", "after"}));
  EXPECT_EQ(c.describe(),
            "pid 4242 (python3, 1.60 GiB) on 0000:06:00.0, 0000:07:00.0; seen case sm_read_bandwidth, after");
  EXPECT_FALSE(contention_in(doc, {"python3"}).contended);
  const json j = to_json(c);
  EXPECT_EQ(j["contended"], true);
  EXPECT_EQ(j["processes"][0]["gpu"], "0000:06:00.0");
}

TEST(Contention, SeenThroughoutIsSaidOnce) {
  json cases = json::array();
  for (const char* k : {"peer_access", "ce_write_bandwidth", "latency", "integrity"}) {
    cases.push_back({{"key", k}, {"foreign_processes", kCopyJob}});
  }
  const json doc = {
      {"contention", {{"source", "nvml"}, {"reason", nullptr}, {"before", kCopyJob}, {"after", kCopyJob}}},
      {"cases", cases}};
  EXPECT_EQ(contention_in(doc, {}).describe(),
            "pid 4242 (python3, 1.60 GiB) on 0000:06:00.0, 0000:07:00.0; seen before, during every case, after");
}

TEST(Contention, AnAgentWithoutSamplesSaysSo) {
  EXPECT_EQ(contention_in(json{{"cases", json::array()}}, {}).source, "absent");
  const Contention none = contention_in(
      json{{"contention",
            {{"source", "none"}, {"reason", "no NVML"}, {"before", json::array()}, {"after", json::array()}}}},
      {});
  EXPECT_EQ(none.source, "none");
  EXPECT_FALSE(none.contended);
}

TEST(GpuActivity, ParsesAndRejectsWithThePath) {
  auto a = parse_gpu_activity(processes_doc(kCopyJob).dump());
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->processes.size(), 2u);
  EXPECT_EQ(a->processes[0].seen, "nvml");
  json bad = processes_doc(json::array({{{"gpu", "0000:06:00.0"}, {"pid", -3}, {"name", "x"}}}));
  a = parse_gpu_activity(bad.dump());
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message, "processes[0].pid: expected a process id");
  EXPECT_FALSE(parse_gpu_activity("not json").ok());
}
