#include "p2pnode/agent/report.hpp"

#include <gtest/gtest.h>

#include <fstream>

using namespace p2pnode::agent;

namespace {

Summary s(double median) {
  Summary x;
  x.count = 3;
  x.median = x.mean = x.min = x.max = x.p10 = x.p90 = median;
  return x;
}

Report two_gpu_report() {
  Report r;
  r.agent_version = "0.1.0";
  r.started_at = rfc3339_utc(0);
  r.seed = 7;
  for (int i = 0; i < 2; ++i) {
    DeviceInfo d;
    d.index = i;
    d.cuda_ordinal = i;
    d.name = "NVIDIA H200";
    d.uuid = "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i);
    d.pci_bus_id = "0000:0" + std::to_string(i) + ":00.0";
    r.devices.push_back(d);
  }
  CaseResult bw;
  bw.key = "ce_write_bandwidth";
  bw.matrix_keys = {"bandwidth_gbps"};
  Cell a;
  a.src = 0;
  a.dst = 1;
  a.measures.emplace_back("bandwidth_gbps", s(396.4));
  Cell b;
  b.src = 1;
  b.dst = 0;
  b.status = Status::waived;
  b.reason = "no peer access";
  bw.cells = {a, b};
  r.cases.push_back(bw);
  CaseResult integ;
  integ.key = "integrity";
  integ.matrix_keys = {"bad_bytes"};
  Cell c;
  c.src = 0;
  c.dst = 1;
  c.numbers.emplace_back("bad_bytes", 0.0);
  c.integrity.push_back({"ce_write/address_seed", 1024, 0, std::nullopt});
  integ.cells = {c};
  r.cases.push_back(integ);
  CaseResult h2d;
  h2d.key = "host_device_bandwidth";
  h2d.shape = CellShape::gpu;
  h2d.matrix_keys = {"h2d_bandwidth_gbps"};
  Cell g;
  g.src = 1;
  g.measures.emplace_back("h2d_bandwidth_gbps", s(55.4));
  h2d.cells = {g};
  r.cases.push_back(h2d);
  return r;
}

}  // namespace

TEST(AgentReport, PassedDocument) {
  Report r = two_gpu_report();
  finalize(r);
  EXPECT_EQ(r.exit_code, 0);
  const auto j = to_json(r);
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["status"], "passed");
  EXPECT_TRUE(j["error"].is_null());
  const auto& m = j["cases"][0]["matrices"]["bandwidth_gbps"];
  ASSERT_EQ(m.size(), 2U);
  EXPECT_TRUE(m[0][0].is_null());
  EXPECT_TRUE(m[0][1].is_number());
  EXPECT_DOUBLE_EQ(m[0][1].get<double>(), 396.4);
  EXPECT_TRUE(m[1][0].is_null());  // waived
  EXPECT_EQ(j["cases"][0]["cells"][1]["status"], "waived");
  EXPECT_EQ(j["cases"][0]["cells"][1]["reason"], "no peer access");
  EXPECT_EQ(j["cases"][1]["cells"][0]["bad_bytes"], 0);
  EXPECT_TRUE(j["cases"][1]["cells"][0]["bad_bytes"].is_number_integer());
  EXPECT_TRUE(j["cases"][1]["cells"][0]["integrity"][0]["first_bad_offset"].is_null());
  const auto& v = j["cases"][2]["matrices"]["h2d_bandwidth_gbps"];
  ASSERT_EQ(v.size(), 2U);
  EXPECT_TRUE(v[0].is_null());
  EXPECT_DOUBLE_EQ(v[1].get<double>(), 55.4);
  EXPECT_EQ(j["cases"][2]["cells"][0]["gpu"], 1);
  EXPECT_EQ(j["summary"]["cases_passed"], 3);
  EXPECT_EQ(j["started_at"], "1970-01-01T00:00:00Z");
}

TEST(AgentReport, IntegrityErrorFailsCaseAndExitsOne) {
  Report r = two_gpu_report();
  Cell& c = r.cases[1].cells[0];
  c.integrity[0].bad_bytes = 65291;
  c.integrity[0].first_bad_offset = 1048576;
  c.status = Status::failed;
  c.reason = "integrity";
  finalize(r);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.cases[1].status, Status::failed);
  const auto j = to_json(r);
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["summary"]["integrity_bad_bytes"], 65291);
  EXPECT_EQ(j["cases"][1]["cells"][0]["integrity"][0]["first_bad_offset"], 1048576);
  const std::string table = render_table(r);
  EXPECT_NE(table.find("INTEGRITY 0->1 ce_write/address_seed: 65291 bad bytes"), std::string::npos) << table;
}

TEST(AgentReport, AllWaivedCellsWaiveTheCase) {
  Report r = two_gpu_report();
  r.cases[0].cells[0].status = Status::waived;
  r.cases[0].cells[0].reason = "time budget of 1 s spent";
  finalize(r);
  EXPECT_EQ(r.cases[0].status, Status::waived);
  EXPECT_EQ(r.cases[0].reason, "time budget of 1 s spent");
  EXPECT_EQ(r.exit_code, 0);
}

TEST(AgentReport, ErrorDocumentExitsThree) {
  Report r;
  r.error = "no usable GPU or driver";
  finalize(r);
  EXPECT_EQ(r.exit_code, 3);
  const auto j = to_json(r);
  EXPECT_EQ(j["status"], "error");
  EXPECT_EQ(j["error"], "no usable GPU or driver");
  EXPECT_TRUE(j["devices"].empty());
  EXPECT_NE(render_table(r).find("ERROR: no usable GPU or driver"), std::string::npos);
}

TEST(AgentReport, TableShowsMatrices) {
  Report r = two_gpu_report();
  finalize(r);
  const std::string t = render_table(r);
  EXPECT_NE(t.find("== ce_write_bandwidth [passed]"), std::string::npos);
  EXPECT_NE(t.find("396.40"), std::string::npos);
  EXPECT_NE(t.find("waived 1->0: no peer access"), std::string::npos);
  EXPECT_NE(t.find("h2d_bandwidth_gbps"), std::string::npos);
}

TEST(AgentReport, NonFiniteNumbersBecomeNull) {
  Report r = two_gpu_report();
  r.cases[1].cells[0].numbers.emplace_back("ratio", std::numeric_limits<double>::quiet_NaN());
  finalize(r);
  const auto j = to_json(r);
  EXPECT_TRUE(j["cases"][1]["cells"][0]["ratio"].is_null());
  EXPECT_NO_THROW((void)j.dump());
}

TEST(AgentReport, RecordedNoGpuDocumentParses) {
  std::ifstream in(std::string(P2PNODE_AGENT_TEST_DATA) + "/no-gpu.json");
  ASSERT_TRUE(in.good());
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["exit_code"], 3);
}

// Where the time and memory went, in the JSON (schema_version unchanged: the fields are
// additions the daemon's parser ignores) and as the --timings text.
TEST(AgentReport, TimingsBreakdownInJsonAndText) {
  Report r = two_gpu_report();
  r.duration_s = 2.5;
  r.setup_s = 0.9;
  r.nvml_s = 0.2;
  Phase ph{"contexts_and_buffers", 0.81, 207000000};
  ph.rss_anon_bytes = 48000000;
  ph.rss_file_bytes = 125000000;
  ph.rss_shmem_bytes = 34000000;
  r.phases.push_back(ph);
  GpuSetup g0;
  g0.gpu = 0;
  g0.context_s = 0.28;
  g0.peer_access_s = 0.05;
  g0.buffer_bytes = 1077936128;
  g0.process_bytes = 1623195648;
  g0.context_bytes = 545259520;
  GpuSetup g1 = g0;
  g1.gpu = 1;
  g1.process_bytes.reset();
  g1.context_bytes.reset();
  r.gpu_setup = {g0, g1};
  r.cases[0].duration_s = 0.32;
  r.cases[0].timings = {0.001, 0.002, 0.31, 0.005};
  finalize(r);
  const auto j = to_json(r);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_DOUBLE_EQ(j["host"]["nvml_s"].get<double>(), 0.2);
  EXPECT_EQ(j["host"]["phases"][0]["rss_shmem_bytes"], 34000000);
  ASSERT_EQ(j["host"]["gpus"].size(), 2u);
  EXPECT_EQ(j["host"]["gpus"][0]["buffer_bytes"], 1077936128u);
  EXPECT_EQ(j["host"]["gpus"][0]["context_bytes"], 545259520u);
  EXPECT_TRUE(j["host"]["gpus"][1]["process_bytes"].is_null());  // NVML could not tell: null, not 0
  EXPECT_DOUBLE_EQ(j["cases"][0]["timings"]["timed_s"].get<double>(), 0.31);
  const std::string text = render_timings(r);
  EXPECT_NE(text.find("contexts_and_buffers"), std::string::npos) << text;
  EXPECT_NE(text.find("ce_write_bandwidth"), std::string::npos) << text;
  EXPECT_NE(text.find("545.3"), std::string::npos) << text;  // GPU 0's context, MB
}

TEST(AgentReport, AutoModeReasonInSchedule) {
  Report r = two_gpu_report();
  r.mode = Mode::rounds;
  r.mode_reason = "auto: rounds, every selected pair is joined by NVLink (disjoint pairs share no link)";
  finalize(r);
  const auto j = to_json(r);
  EXPECT_EQ(j["schedule"]["mode"], "rounds");
  EXPECT_EQ(j["schedule"]["reason"], r.mode_reason);
}
