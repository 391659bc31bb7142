// The driver's own word through the monitor: agent documents of schema 2 (what
// `p2pnode-agent --health` prints, agent/src/host/health.cpp), decoded as the daemon decodes them,
// over several passes: every recovery action, a replay counter that rises and one that rolls over,
// a P2P status that drops from OK, memory that cannot be trusted; and what the decoder refuses.
#include <gtest/gtest.h>

#include "health/agent_health.hpp"
#include "health/monitor.hpp"

using namespace p2pnode;
using namespace p2pnode::health;

namespace {
using json = nlohmann::json;

// Two GPUs under one switch, as in monitor_test.cpp.
PathIndex two_gpu_box() {
  return index_paths({{"0000:03:00.0", "gpu", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}, "pci0000:00", 0},
                      {"0000:04:00.0", "gpu", {"0000:00:01.0", "0000:01:00.0", "0000:02:01.0"}, "pci0000:00", 0}});
}

// What the agent prints for two GPUs; tweak(j) changes it before it is decoded.
json doc() {
  auto gpu = [](const char* bdf) {
    return json{
        {"index", 0},
        {"pci_bus_id", bdf},
        {"name", "NVIDIA H200"},
        {"problem", nullptr},
        {"links", json::array()},
        {"recovery_action", "none"},
        {"recovery_problem", nullptr},
        {"pcie", {{"replay", 0}, {"replay_rollover", 0}, {"gen", 5}, {"max_gen", 5}, {"width", 16}, {"max_width", 16}}},
        {"memory",
         {{"remapped_correctable", 0},
          {"remapped_uncorrectable", 0},
          {"remap_pending", false},
          {"remap_failure", false},
          {"volatile_uncorrected_ecc", 0}}}};
  };
  auto pair = [](const char* a, const char* b) {
    return json{{"gpu", a},       {"peer_gpu", b},   {"read", "ok"},          {"write", "ok"},
                {"nvlink", "ok"}, {"atomics", "ok"}, {"pci", "not_supported"}};
  };
  return {{"schema_version", 2},
          {"kind", "health"},
          {"agent_version", "0.1.0"},
          {"nvml", {{"available", true}, {"driver_version", "580.159.04"}, {"reason", nullptr}}},
          {"gpus", {gpu("0000:03:00.0"), gpu("0000:04:00.0")}},
          {"p2p_status", {pair("0000:03:00.0", "0000:04:00.0"), pair("0000:04:00.0", "0000:03:00.0")}}};
}

struct Passes {
  HealthMonitor m{600};
  PathIndex paths = two_gpu_box();
  double t = 0;
  void run(const json& j) {
    HealthSample s;
    s.mono_s = t;
    t += 10;
    s.xid.source = "/dev/kmsg";
    auto r = decode_agent_health(j.dump());
    ASSERT_TRUE(r) << r.error().message;
    s.agent = *r;
    m.update(s, paths);
  }
  const Finding* find(const std::string& check, const std::string& subject = "0000:03:00.0") const {
    for (const auto& f : m.findings()) {
      if (f.check == check && f.subject == subject) { return &f; }
    }
    return nullptr;
  }
};
}  // namespace

TEST(DriverVerdict, EveryRecoveryAction) {
  struct Want {
    const char* action;
    Severity severity;
    bool drains;
    const char* words;
  };
  const Want wants[] = {{"gpu_reset", Severity::error, false, "GPU Reset"},
                        {"node_reboot", Severity::error, false, "Node Reboot"},
                        {"drain_p2p", Severity::error, true, "Drain P2P"},
                        {"drain_and_reset", Severity::error, true, "Drain P2P and Reset"},
                        {"recover_imex_domain", Severity::warning, false, "Recover IMEX Domain"},
                        {"unknown_9", Severity::warning, false, "unknown_9"}};
  for (const auto& w : wants) {
    Passes p;
    json j = doc();
    j["gpus"][0]["recovery_action"] = w.action;
    p.run(j);
    const Finding* f = p.find("health.recovery");
    ASSERT_NE(f, nullptr) << w.action;
    EXPECT_EQ(f->severity, w.severity) << w.action;
    EXPECT_EQ(f->observed["p2p_ready"], !w.drains) << w.action;
    EXPECT_EQ(recovery_blocks_p2p(w.action), w.drains) << w.action;
    EXPECT_NE(f->summary.find(std::string("is \"") + w.words + "\""), std::string::npos) << f->summary;
    EXPECT_NE(f->summary.find("0000:03:00.0-0000:04:00.0"), std::string::npos) << "names the pairs: " << f->summary;
    if (w.drains) { EXPECT_NE(f->summary.find("not P2P-ready"), std::string::npos) << f->summary; }
    EXPECT_EQ(p.m.view()["gpus"][0]["recovery_action"], w.action);
    // It clears: the next pass reads none and the finding is gone.
    p.run(doc());
    EXPECT_EQ(p.find("health.recovery"), nullptr) << w.action;
  }
  // "none" and an older driver that does not answer (null) are no finding.
  Passes p;
  json j = doc();
  j["gpus"][1]["recovery_action"] = nullptr;
  j["gpus"][1]["recovery_problem"] = "the recovery action field is not answered: Not Supported (3)";
  p.run(j);
  EXPECT_TRUE(p.m.findings().empty());
  EXPECT_TRUE(p.m.view()["gpus"][1]["recovery_action"].is_null());
}

TEST(DriverVerdict, ReplayCounterRisesAndRollsOver) {
  Passes p;
  json j = doc();
  j["gpus"][0]["pcie"]["replay"] = 1;  // a first reading proves no rise (the lent H200 showed 1 since reset)
  p.run(j);
  EXPECT_EQ(p.find("health.gpu_pcie"), nullptr);
  j["gpus"][0]["pcie"]["replay"] = 5;
  p.run(j);
  EXPECT_EQ(p.find("health.gpu_pcie"), nullptr) << "4 replays: what healthy GPUs count (the limit is 8 a minute)";
  j["gpus"][0]["pcie"]["replay"] = 45;
  p.run(j);
  const Finding* f = p.find("health.gpu_pcie");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::warning);
  EXPECT_NE(f->summary.find("replays +44 in the last 10m, 44/min (limit 8/min)"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("this box has no AER files for it, NVML is the only source"), std::string::npos)
      << f->summary;
  EXPECT_EQ(f->observed["source"], "nvml");
  // The hardware counter wrapped: the replay count drops, the rollover counter rises.
  j["gpus"][0]["pcie"]["replay"] = 2;
  j["gpus"][0]["pcie"]["replay_rollover"] = 1;
  p.run(j);
  f = p.find("health.gpu_pcie");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->summary.find("replay counter rollovers +1"), std::string::npos) << f->summary;
  // A narrower link from the GPU's own view; a lower generation (idle) is not a finding.
  Passes q;
  json k = doc();
  k["gpus"][1]["pcie"]["gen"] = 1;
  q.run(k);
  EXPECT_TRUE(q.m.findings().empty());
  k["gpus"][1]["pcie"]["width"] = 8;
  q.run(k);
  f = q.find("health.gpu_pcie", "0000:04:00.0");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->summary.find("width x8 of x16"), std::string::npos) << f->summary;
}

TEST(DriverVerdict, SaysWhichSourceSawWhatWhereBothExist) {
  Passes p;
  DeviceReading d;
  d.bdf = "0000:03:00.0";
  d.kind = "gpu";
  d.aer["correctable"] = {{{"RxErr", 0}}, 0};
  HealthSample s;
  s.xid.source = "/dev/kmsg";
  s.devices = {d};
  s.agent = *decode_agent_health(doc().dump());
  p.m.update(s, p.paths);
  s.mono_s = 10;
  s.devices[0].aer["correctable"] = {{{"RxErr", 30}}, 30};
  json j = doc();
  j["gpus"][0]["pcie"]["replay"] = 20;
  s.agent = *decode_agent_health(j.dump());
  p.m.update(s, p.paths);
  const Finding* f = p.find("health.gpu_pcie");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->summary.find("replays +20"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("sysfs AER saw correctable +30 in the same window"), std::string::npos) << f->summary;
  EXPECT_NE(p.find("health.aer"), nullptr);  // and the AER finding of its own
}

TEST(DriverVerdict, APairWhoseStatusDropsFromOk) {
  Passes p;
  json j = doc();
  p.run(j);
  EXPECT_EQ(p.find("health.p2p_status"), nullptr);
  j["p2p_status"][0]["read"] = "disabled_by_regkey";
  j["p2p_status"][0]["write"] = "disabled_by_regkey";
  p.run(j);
  const Finding* f = p.find("health.p2p_status");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::error);
  EXPECT_EQ(f->summary,
            "the driver no longer allows P2P from GPU 0000:03:00.0 to 0000:04:00.0: read disabled_by_regkey, "
            "write disabled_by_regkey (it was OK in an earlier pass)");
  EXPECT_EQ(p.find("health.p2p_status", "0000:04:00.0"), nullptr);  // the other direction stayed OK
  EXPECT_EQ(p.m.view()["p2p_status"][0]["read"], "disabled_by_regkey");
  // PCI was never OK between them (they talk NVLink): not a drop.
  for (const auto& x : p.m.findings()) {
    EXPECT_EQ(x.observed.value("lost", json::array()).dump().find("pci"), std::string::npos);
  }
  // Back to OK: the finding goes.
  p.run(doc());
  EXPECT_EQ(p.find("health.p2p_status"), nullptr);
  // A pair that was never OK (chipset not supported from the first reading) is the platform checks'
  // matter, not a loss.
  Passes q;
  json k = doc();
  k["p2p_status"][1]["read"] = "chipset_not_supported";
  q.run(k);
  q.run(k);
  EXPECT_EQ(q.find("health.p2p_status", "0000:04:00.0"), nullptr);
}

TEST(DriverVerdict, MemoryThatCannotBeTrusted) {
  Passes p;
  json j = doc();
  j["gpus"][0]["memory"]["volatile_uncorrected_ecc"] = 2;
  p.run(j);
  EXPECT_EQ(p.find("health.memory"), nullptr);  // a first reading: counted before we looked
  j["gpus"][0]["memory"]["volatile_uncorrected_ecc"] = 3;
  j["gpus"][1]["memory"]["remap_pending"] = true;
  p.run(j);
  const Finding* f = p.find("health.memory");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::error);
  EXPECT_NE(f->summary.find("uncorrected ECC errors +1 in the last 10m: bytes it holds or copies cannot be trusted"),
            std::string::npos)
      << f->summary;
  const Finding* w = p.find("health.memory", "0000:04:00.0");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->severity, Severity::warning);
  EXPECT_NE(w->summary.find("a row remap is pending until the GPU is reset"), std::string::npos) << w->summary;
  j["gpus"][1]["memory"]["remap_failure"] = true;
  p.run(j);
  EXPECT_EQ(p.find("health.memory", "0000:04:00.0")->severity, Severity::error);
}

TEST(DriverVerdict, DecoderRefusesWhatIsNotTheDriversWord) {
  auto refuse = [](json j, const std::string& want) {
    const auto r = decode_agent_health(j.dump());
    ASSERT_FALSE(r) << want;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
  };
  json j = doc();
  j["gpus"][0].erase("recovery_action");
  refuse(j, "gpus[0].recovery_action missing");
  j = doc();
  j["gpus"][0]["recovery_action"] = "Drain P2P; rm -rf /";
  refuse(j, "gpus[0].recovery_action is not an action name");
  j = doc();
  j["gpus"][0]["pcie"]["replay"] = -1;
  refuse(j, "gpus[0].pcie: a replay counter is not a count");
  j = doc();
  j["gpus"][0]["pcie"]["width"] = 4096;
  refuse(j, "gpus[0].pcie: a link generation or width is out of range");
  j = doc();
  j["gpus"][0]["memory"]["remap_pending"] = "yes";
  refuse(j, "remap_pending or remap_failure is not a boolean");
  j = doc();
  j.erase("p2p_status");
  refuse(j, "p2p_status missing or not an array");
  j = doc();
  j["p2p_status"][0]["read"] = 3;
  refuse(j, "p2p_status[0].read is not a status name");
  // A schema 1 document (an older agent) is read without the driver's state.
  j = doc();
  j["schema_version"] = 1;
  const auto r = decode_agent_health(j.dump());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->driver_state);
  EXPECT_TRUE(r->p2p.empty());
}
