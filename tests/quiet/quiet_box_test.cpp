// A healthy box stays quiet: the agent reads a stand-in NVML (tests/fake_nvml, box h100x4: 4x H100,
// 72 NVLinks, counters rising at the rates measured on a healthy box) through its real NVML code,
// prints its real health document, and the daemon decodes and judges it pass after pass, as
// `p2pnode serve` does every 10 s. Idle and through three self-tests: no finding. One link that
// replays and recovers, or counts corrected ECC far above a healthy link's rate: a finding naming
// that link, its far end and its pair.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "fake_nvml/use_box.hpp"
#include "health/agent_health.hpp"
#include "health/monitor.hpp"
#include "p2pnode/agent/health.hpp"
#include "unit/temp_dir.hpp"

using namespace p2pnode;

namespace {
const char* const kGpus[] = {"0000:00:06.0", "0000:00:07.0", "0000:00:08.0", "0000:00:09.0"};

struct Box {
  fake_nvml::UseBox nvml_box{"h100x4"};
  p2pnode::test::TempDir dir{"quiet-box"};
  std::string state = (dir / "fake-nvml.state").string();
  health::HealthMonitor monitor{600};
  health::PathIndex paths;
  double t = 0, selftest = 0;
  std::string bad;  // "bad_gpu=…\nbad_link=…\nbad_kind=…\n"
  Box() {
    std::vector<health::Endpoint> e;
    for (const char* g : kGpus) { e.push_back({g, "gpu", {}, "pci0000:00", 0}); }
    paths = health::index_paths(e);
    ::setenv("P2PNODE_FAKE_NVML_STATE", state.c_str(), 1);
  }
  // One health pass at the stand-in's clock: the agent's read, its document, the daemon's decode.
  const std::vector<Finding>& pass() {
    std::ofstream(state, std::ios::trunc) << "t=" << t << "\nselftest=" << selftest << "\n" << bad;
    const auto report = agent::read_health(P2PNODE_FAKE_NVML);
    EXPECT_TRUE(report.available) << report.reason;
    const std::string doc = agent::health_json(report, "test").dump();
    auto reading = health::decode_agent_health(doc);
    EXPECT_TRUE(reading) << reading.error().message;
    health::HealthSample s;
    s.mono_s = t;
    s.agent = reading.value();
    s.xid.source = "/dev/kmsg";
    monitor.update(s, paths);
    return monitor.findings();
  }
  // `seconds` of passes every 10 s; a self-test of 4.3 s in each of the first `tests` passes.
  void run(double seconds, int tests = 0) {
    for (double end = t + seconds; t < end;) {
      t += 10;
      if (tests-- > 0) { selftest += 4.3; }
      for (const auto& f : pass()) {
        ADD_FAILURE() << "t=" << t << ": " << f.check << " " << f.subject << ": " << f.summary;
      }
    }
  }
};
}  // namespace

TEST(QuietBox, HealthyRatesOn72LinksIdleAndUnderSelfTestsGiveNoFinding) {
  Box b;
  EXPECT_TRUE(b.pass().empty());
  const auto v = b.monitor.view();
  ASSERT_EQ(v["nvlink"]["gpus"].size(), 4u);
  EXPECT_EQ(v["nvlink"]["gpus"][0]["active_links"], 18);
  b.run(600);    // ten minutes idle
  b.run(30, 3);  // three self-tests back to back
  b.run(600);    // ten quiet minutes
  // The counters did rise, as on the real box: ecc_data over all 72 links in those 20.5 minutes
  // (0.66/s a link for 1,230 s and 18.7/s a link for 12.9 s of self-tests: about 72,000).
  std::uint64_t ecc = 0;
  const auto view = b.monitor.view();
  for (const auto& g : view["nvlink"]["gpus"]) {
    for (const auto& l : g["links"]) { ecc += l["errors"]["ecc_data"].get<std::uint64_t>(); }
  }
  EXPECT_GT(ecc, 65000u);
  EXPECT_LT(ecc, 80000u);
}

TEST(QuietBox, ALinkThatReplaysAndRecoversIsNamedWithItsPair) {
  Box b;
  b.bad = "bad_gpu=2\nbad_link=7\nbad_kind=1\n";
  b.pass();
  b.t = 130;
  b.pass();
  const Finding* f = nullptr;
  for (const auto& x : b.monitor.findings()) {
    EXPECT_EQ(x.subject, "0000:00:08.0") << x.summary;
    if (x.check == "health.nvlink" && x.observed["link"] == 7) { f = &x; }
  }
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(b.monitor.findings().size(), 1u);
  EXPECT_EQ(f->severity, Severity::error);  // a recovery
  // Link 7 of GPU 2 goes to the second of the others: 0000:00:07.0.
  EXPECT_NE(f->summary.find("NVLink 7 of GPU 0000:00:08.0: recovery +1, replay +6 errors"), std::string::npos)
      << f->summary;
  EXPECT_NE(f->summary.find("(far end 0000:00:07.0, the pair 0000:00:08.0-0000:00:07.0)"), std::string::npos)
      << f->summary;
}

TEST(QuietBox, CorrectedEccFarAboveHealthyIsAFinding) {
  Box b;
  b.bad = "bad_gpu=0\nbad_link=13\nbad_kind=2\n";
  b.pass();
  b.t = 10;
  EXPECT_TRUE(b.pass().empty()) << "20,000 in the first 10 s: read over at least a minute, 333/s";
  b.t = 70;
  const auto& fs = b.pass();
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].check, "health.nvlink");
  EXPECT_EQ(fs[0].severity, Severity::warning);
  EXPECT_EQ(fs[0].observed["link"], 13);
  EXPECT_NE(fs[0].summary.find("ecc_data"), std::string::npos) << fs[0].summary;
  EXPECT_NE(fs[0].summary.find("(limit 1000/s)"), std::string::npos) << fs[0].summary;
  EXPECT_NE(fs[0].summary.find("the pair 0000:00:06.0-0000:00:09.0"), std::string::npos) << fs[0].summary;
}
