// The daemon's side of the NVMe doorbell test: which drives, the agent's arguments, the verdict
// from a recorded agent document (the VM run, tests/unit/agent/data/nvme-doorbell-vm.json),
// the state file round trip, the metric and the status lines.
#include "judge/doorbell.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/metrics.hpp"
#include "engine/state.hpp"
#include "engine/views.hpp"
#include "unit/source_files.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;
using namespace p2pnode::judge;
using namespace p2pnode::engine;

namespace {
using p2pnode::test_files::kSrc;

std::string recorded_vm_doc() {
  std::ifstream in(kSrc / "tests/unit/agent/data/nvme-doorbell-vm.json");
  std::ostringstream t;
  t << in.rdbuf();
  return t.str();
}

Profile profile_with(std::optional<std::string> pair_gpu, std::string driver = "vfio-pci") {
  Profile p;
  p.name = "t";
  NvmeDrive d;
  d.serial = "P2PVM-DB";
  d.driver = std::move(driver);
  if (pair_gpu) { d.pair_gpu = PciAddress::parse(*pair_gpu); }
  p.nvme = NvmeSpec{false, {d}};
  return p;
}

AgentRun run_of(const std::string& doc) {
  AgentRun run;
  run.started_unix = 1700000000;
  run.duration_s = 0.4;
  auto r = parse_agent_result(doc);
  EXPECT_TRUE(static_cast<bool>(r)) << (r ? "" : r.error().message);
  if (r) { run.result = *r; }
  return run;
}
}  // namespace

TEST(NvmeDoorbell, TargetsAreProfileDrivesOnVfioWithAPairGpu) {
  const std::vector<nvme::ControllerIdentity> ids = {{"0000:00:02.0", "vfio-pci", "P2PVM-DB", "QEMU NVMe Ctrl", true},
                                                     {"0000:00:03.0", "nvme", "P2PVM-KEEP", "QEMU NVMe Ctrl", false}};
  const auto t = doorbell_targets(profile_with("0000:0a:00.0"), ids);
  ASSERT_EQ(t.targets.size(), 1u);
  EXPECT_EQ(t.targets[0].bdf, "0000:00:02.0");
  EXPECT_EQ(t.targets[0].serial, "P2PVM-DB");
  EXPECT_EQ(t.targets[0].model, "QEMU NVMe Ctrl");
  EXPECT_EQ(t.targets[0].pair_gpu, "0000:0a:00.0");
  EXPECT_TRUE(t.skipped.empty());
  // No pair_gpu: not tested (the profile did not ask for GPU-direct on it).
  EXPECT_TRUE(doorbell_targets(profile_with(std::nullopt), ids).targets.empty());
  // Still on nvme (apply has not bound it yet): skipped with the reason, never tested.
  const std::vector<nvme::ControllerIdentity> on_nvme = {{"0000:00:02.0", "nvme", "P2PVM-DB", "QEMU NVMe Ctrl", false}};
  const auto s = doorbell_targets(profile_with("0000:0a:00.0"), on_nvme);
  EXPECT_TRUE(s.targets.empty());
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_NE(s.skipped[0].find("not on vfio-pci"), std::string::npos);
  // A comma would split the --nvme value: refused, not passed on half.
  const std::vector<nvme::ControllerIdentity> comma = {{"0000:00:02.0", "vfio-pci", "P2PVM-DB", "Model, Inc", true}};
  EXPECT_TRUE(doorbell_targets(profile_with("0000:0a:00.0"), comma).targets.empty());
}

TEST(NvmeDoorbell, AgentArguments) {
  const auto a = doorbell_args({{"0000:0b:00.0", "21165N801234", "WDC PC SN530 SDBPNPZ-1T00-1002", "0000:0a:00.0"}});
  const std::vector<std::string> want = {
      "--cases",          "nvme_doorbell",
      "--writer",         "both",
      "--nvme",           "bdf=0000:0b:00.0,serial=21165N801234,model=WDC PC SN530 SDBPNPZ-1T00-1002,gpu=0000:0a:00.0",
      "--size",           "4MiB",
      "--host-size",      "4MiB",
      "--integrity-size", "1MiB"};
  EXPECT_EQ(a, want);
}

TEST(NvmeDoorbell, VerdictFromTheVmRun) {
  const DoorbellTarget t{"0000:00:02.0", "P2PVM-DB", "QEMU NVMe Ctrl", "0000:0a:00.0"};
  const auto rec = judge_doorbell(run_of(recorded_vm_doc()), {t});
  EXPECT_EQ(rec.verdict, "passed");
  ASSERT_EQ(rec.results.size(), 1u);
  EXPECT_EQ(rec.results[0].nvme, "0000:00:02.0");
  EXPECT_EQ(rec.results[0].writer, "host");
  EXPECT_EQ(rec.results[0].gpu, "0000:0a:00.0");  // from the target: the host binary names no GPU
  EXPECT_TRUE(rec.results[0].ok);
  EXPECT_EQ(rec.results[0].serial, "P2PVM-DB");
  ASSERT_TRUE(rec.results[0].completion_us.has_value());
  const auto lines = doorbell_lines(rec);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(
      lines[0].find("0000:00:02.0 <- GPU 0000:0a:00.0, host writer: OK, the drive answered Identify (serial P2PVM-DB)"),
      std::string::npos)
      << lines[0];
}

TEST(NvmeDoorbell, AFailedGpuWriterIsNamed) {
  auto doc = nlohmann::json::parse(recorded_vm_doc());
  auto& cells = doc["cases"][0]["cells"];
  nlohmann::json gpu_cell = cells[0];
  gpu_cell["writer"] = "gpu";
  gpu_cell["pair_gpu"] = "0000:0a:00.0";
  gpu_cell["status"] = "failed";
  gpu_cell["reason"] =
      "gpu writer: cudaHostRegister(...) failed with cudaErrorInvalidValue: kernel 6.17.0-14-generic has "
      "no follow_pfn() [cause: module_io_memory_pfn]";
  cells.insert(cells.begin(), gpu_cell);
  doc["cases"][0]["status"] = "failed";
  doc["status"] = "failed";
  doc["exit_code"] = 1;
  doc["summary"]["cases_passed"] = 0;
  doc["summary"]["cases_failed"] = 1;
  const auto rec = judge_doorbell(run_of(doc.dump()), {});
  EXPECT_EQ(rec.verdict, "failed");
  ASSERT_EQ(rec.reasons.size(), 1u);
  EXPECT_NE(rec.reasons[0].find("0000:00:02.0 (gpu writer, GPU 0000:0a:00.0): gpu writer: cudaHostRegister"),
            std::string::npos);
  ASSERT_EQ(rec.results.size(), 2u);
  EXPECT_FALSE(rec.results[0].ok);
  EXPECT_TRUE(rec.results[1].ok);  // the host writer still worked: the GPU side is what is broken
  const auto lines = doorbell_lines(rec);
  EXPECT_NE(lines[0].find("gpu writer: FAILED: "), std::string::npos);
  EXPECT_NE(lines[1].find("host writer: OK"), std::string::npos);
}

TEST(NvmeDoorbell, AHungAgentIsAnError) {
  AgentRun run;
  run.judgement = {"error", {"the agent hung: no result within 2m; its process group was killed"}};
  const auto rec = judge_doorbell(run, {});
  EXPECT_EQ(rec.verdict, "error");
  EXPECT_EQ(doorbell_lines(rec)[0],
            "NVMe doorbell test could not run: the agent hung: no result within 2m; its process group was killed");
}

TEST(NvmeDoorbell, StateMetricsAndStatus) {
  RecordedState s;
  s.nvme_doorbell = judge_doorbell(run_of(recorded_vm_doc()), {{"0000:00:02.0", "P2PVM-DB", "", "0000:0a:00.0"}});
  // Persisted and read back.
  const auto back = state_from_json(to_json(s));
  ASSERT_TRUE(static_cast<bool>(back)) << back.error().message;
  ASSERT_TRUE(back->nvme_doorbell.has_value());
  EXPECT_EQ(back->nvme_doorbell->results[0].serial, "P2PVM-DB");
  // A state file from before the doorbell test still loads.
  auto old = to_json(RecordedState{});
  old.erase("nvme_doorbell");
  EXPECT_TRUE(static_cast<bool>(state_from_json(old)));
  // The metric.
  const std::string m = render_metrics(s, Runtime{});
  EXPECT_NE(m.find("# TYPE p2pnode_nvme_doorbell_ok gauge"), std::string::npos);
  EXPECT_NE(m.find("p2pnode_nvme_doorbell_ok{gpu=\"0000:0a:00.0\",nvme=\"0000:00:02.0\",writer=\"host\"} 1"),
            std::string::npos)
      << m;
  EXPECT_EQ(render_metrics(RecordedState{}, Runtime{}).find("p2pnode_nvme_doorbell_ok"), std::string::npos);
  // /v1/status carries the lines `p2pnode status` prints; /v1/selftest the record.
  const auto st = status_body(s, Runtime{});
  EXPECT_EQ(st["nvme_doorbell"]["verdict"], "passed");
  EXPECT_EQ(st["nvme_doorbell"]["lines"].size(), 1u);
  EXPECT_EQ(selftest_body(s)["nvme_doorbell"]["results"][0]["ok"], true);
}
