// src/host/gpu_processes.cpp through dlopen against the stand-in NVML (tests/fake_nvml, box
// h200-nvswitch): the processes of the watched GPUs by bus id, our own pid left out, names, the
// buffer grown when NVML asks for more room, every GPU when none is named, and no NVML at all.
#include "p2pnode/agent/gpu_processes.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "fake_nvml/use_box.hpp"

using namespace p2pnode::agent;
using p2pnode::fake_nvml::UseBox;

namespace {
struct FakeProcesses {
  explicit FakeProcesses(const std::string& rows) { setenv("FAKE_NVML_PROCESSES", rows.c_str(), 1); }
  ~FakeProcesses() { unsetenv("FAKE_NVML_PROCESSES"); }
};
}  // namespace

TEST(GpuProcesses, ListsOtherProcessesOnTheWatchedGpus) {
  const UseBox box("h200-nvswitch");
  FakeProcesses f("0:4242:python3:1717986918;1:4242:python3:1717986918;1:777:p2pnode-agent:1000;2:99:other:5");
  ProcessWatch w({"0000:00:06.0", "0000:00:07.0"}, 777, P2PNODE_FAKE_NVML);
  ASSERT_TRUE(w.available()) << w.reason();
  const auto ps = w.sample();
  ASSERT_EQ(ps.size(), 2u);  // our own pid 777 and GPU 2, which is not watched, are left out
  EXPECT_EQ(ps[0].gpu, "0000:00:06.0");
  EXPECT_EQ(ps[0].pid, 4242u);
  EXPECT_EQ(ps[0].name, "python3");  // NVML's path, its last part
  EXPECT_EQ(ps[0].used_memory_bytes, 1717986918u);
  EXPECT_EQ(ps[1].gpu, "0000:00:07.0");
  const auto load = w.load();
  ASSERT_EQ(load.size(), 2u);
  EXPECT_EQ(load[0].utilization_percent, 57u);
}

TEST(GpuProcesses, OwnMemoryIsOurPidPerWatchedGpu) {
  const UseBox box("h200-nvswitch");
  // --timings: what the agent itself holds per GPU (context + modules + buffers as the driver counts).
  FakeProcesses f("0:4242:python3:1717986918;1:777:p2pnode-agent:1200000000;1:4242:python3:1");
  ProcessWatch w({"0000:00:06.0", "0000:00:07.0"}, 777, P2PNODE_FAKE_NVML);
  ASSERT_TRUE(w.available()) << w.reason();
  const auto own = w.own_memory(777);
  ASSERT_EQ(own.size(), 2u);
  EXPECT_FALSE(own[0].has_value());  // not on GPU 0: unknown, never another process's figure
  ASSERT_TRUE(own[1].has_value());
  EXPECT_EQ(*own[1], 1200000000u);
  EXPECT_EQ(w.sample().size(), 2u);  // still left out of the other processes
  ProcessWatch none({"0000:00:06.0"}, 0, "/nonexistent/libnvidia-ml.so.1");
  EXPECT_TRUE(none.own_memory(777).empty());
}

TEST(GpuProcesses, GrowsItsBufferWhenNvmlAsksForMoreRoom) {
  const UseBox box("h200-nvswitch");
  std::string rows;
  for (int pid = 100; pid < 140; ++pid) { rows += "0:" + std::to_string(pid) + ":job:1;"; }
  FakeProcesses f(rows);
  ProcessWatch w({"0000:00:06.0"}, 0, P2PNODE_FAKE_NVML);
  EXPECT_EQ(w.sample().size(), 40u);
}

TEST(GpuProcesses, EveryGpuWhenNoneIsNamedAndTheDocument) {
  const UseBox box("h200-nvswitch");
  FakeProcesses f("2:99:other:5");
  ProcessWatch w({}, 0, P2PNODE_FAKE_NVML);
  ASSERT_TRUE(w.available()) << w.reason();
  EXPECT_EQ(w.gpus(), (std::vector<std::string>{"0000:00:06.0", "0000:00:07.0", "0000:00:08.0"}));
  const auto doc = processes_document(w, "1.2.3");
  EXPECT_EQ(doc["kind"], "gpu_processes");
  EXPECT_EQ(doc["source"], "nvml");
  EXPECT_EQ(doc["gpus"].size(), 3u);
  ASSERT_EQ(doc["processes"].size(), 1u);
  EXPECT_EQ(doc["processes"][0]["gpu"], "0000:00:08.0");
  EXPECT_EQ(doc["processes"][0]["name"], "other");
}

TEST(GpuProcesses, NoNvmlIsAStatedReasonAndNoProcess) {
  const UseBox box("h200-nvswitch");
  ProcessWatch w({"0000:00:06.0"}, 0, "/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(w.available());
  EXPECT_EQ(w.reason().rfind("NVML not available: ", 0), 0u) << w.reason();
  EXPECT_TRUE(w.sample().empty());
  const auto doc = processes_document(w, "1.2.3");
  EXPECT_EQ(doc["source"], "none");
  EXPECT_TRUE(doc["reason"].is_string());
  ProcessWatch unknown({"0000:3b:00.0"}, 0, P2PNODE_FAKE_NVML);
  EXPECT_FALSE(unknown.available());
  EXPECT_NE(unknown.reason().find("NVML does not know GPU 0000:3b:00.0"), std::string::npos) << unknown.reason();
}
