// rebar.aperture judged against the VRAM the card reports (agent or nvidia-smi) where it differs
// from the model table: a modded 48 GB card behind a 32 GiB BAR is an error; a stock card's
// slightly lower report changes nothing.
#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "judge/interconnect.hpp"
#include "probe/probe.hpp"
#include "sys/command_runner.hpp"
#include "unit/source_files.hpp"

using namespace p2pnode;

namespace {
using p2pnode::test_files::kSrcDir;

const Finding* find(const std::vector<Finding>& fs, const std::string& subject) {
  for (const auto& f : fs) {
    if (f.subject == subject) { return &f; }
  }
  return nullptr;
}
}  // namespace

TEST(RebarVram, AModdedCardIsJudgedByTheVramItReports) {
  Inventory inv = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/tinybox-6x4090"));
  sys::ScriptedRunner runner;
  // 01:00.0 is a stock 4090 (24564 MiB), 42:00.0 a modded 48 GB card (tinygrad#36).
  runner.on({"nvidia-smi"}, sys::exited_with(0, "00000000:01:00.0, 24564\n00000000:42:00.0, 49140\n"));
  probe::probe_gpu_memory_by_commands(runner, inv);
  ASSERT_EQ(runner.calls().size(), 1u);
  EXPECT_EQ(runner.calls()[0], (std::vector<std::string>{"nvidia-smi", "--query-gpu=pci.bus_id,memory.total",
                                                         "--format=csv,noheader,nounits"}));
  EXPECT_EQ(inv.gpu_memory_source, "nvidia-smi");
  const auto fs = checks::check_rebar_aperture(Profile{}, inv);
  const Finding* stock = find(fs, "0000:01:00.0");
  ASSERT_TRUE(stock);
  EXPECT_EQ(stock->severity, Severity::ok);
  EXPECT_EQ(stock->summary, "VRAM aperture (BAR1) is 32 GiB, covers 24 GiB + 128 KiB");
  EXPECT_EQ(stock->observed["vram_reported"]["bytes"], 24564 * MiB);
  const Finding* modded = find(fs, "0000:42:00.0");
  ASSERT_TRUE(modded);
  EXPECT_EQ(modded->severity, Severity::error);
  EXPECT_EQ(modded->summary,
            "VRAM aperture (BAR1) is 32 GiB, needs >= 48 GiB + 128 KiB; the card reports 49140 MiB (nvidia-smi), the "
            "model table says 24 GiB for GeForce RTX 4090: judged by the card's own (a modded card?)")
      << modded->summary;
  EXPECT_NE(modded->remediation.find("Resizable BAR offers at most 32 GiB"), std::string::npos) << modded->remediation;
  // Which tree peers such a card, and what the profile must say.
  EXPECT_NE(
      modded->remediation.find("the -48g forks for 48 GB RTX 4090s (LingzheZhao's 610.57.04-p2p-48g on aikitoria's "
                               "610.57.04-p2p-v2, Duanyll's 595.71.05-p2p-48g). Name one in driver.kernel_module "
                               "and set driver.kernel_module.bar1: window"),
      std::string::npos)
      << modded->remediation;
  // With such a tree the card's largest BAR1 is what it needs: ok, and the stock card the same.
  Profile window;
  window.driver = DriverSpec{};
  window.driver->version = "610.57.04";
  window.driver->kernel_module = ModuleSource{};
  window.driver->kernel_module->bar1 = Bar1Mapping::window;
  const auto wf = checks::check_rebar_aperture(window, inv);
  ASSERT_TRUE(find(wf, "0000:42:00.0"));
  EXPECT_EQ(find(wf, "0000:42:00.0")->severity, Severity::ok);
  EXPECT_EQ(
      find(wf, "0000:42:00.0")->summary,
      "VRAM aperture (BAR1) is 32 GiB, the card's largest; the tree peers through a BAR1 window (bar1: window), so "
      "48 GiB of VRAM need not fit; the card reports 49140 MiB (nvidia-smi), the model table says 24 GiB for "
      "GeForce RTX 4090: judged by the card's own (a modded card?)");
  EXPECT_EQ(find(wf, "0000:01:00.0")->severity, Severity::ok);
  // The profile's own figure still wins.
  Profile p;
  p.platform.gpu_vram = 24 * GiB;
  EXPECT_EQ(find(checks::check_rebar_aperture(p, inv), "0000:42:00.0")->severity, Severity::ok);
}

TEST(RebarVram, TheAgentsReportIsUsedAndNvidiaSmiIsThenNotAsked) {
  Inventory inv = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/tinybox-6x4090"));
  const nlohmann::json doc = {{"started_at", "2026-11-24T02:00:00Z"},
                              {"devices", {{{"pci_bus_id", "0000:c2:00.0"}, {"memory_bytes", 51527024640ULL}}}}};
  ASSERT_TRUE(judge::merge_agent_interconnect(inv, doc));
  EXPECT_EQ(inv.gpu_memory.at("0000:c2:00.0"), 51527024640ULL);
  EXPECT_EQ(inv.gpu_memory_source, "agent (self-test of 2026-11-24T02:00:00Z)");
  sys::ScriptedRunner runner;
  probe::probe_gpu_memory_by_commands(runner, inv);
  EXPECT_TRUE(runner.calls().empty());
  const Finding* f = find(checks::check_rebar_aperture(Profile{}, inv), "0000:c2:00.0");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::error);
  EXPECT_NE(f->summary.find("needs >= 48 GiB + 128 KiB; the card reports 49140 MiB (agent"), std::string::npos)
      << f->summary;
}

TEST(RebarVram, NoDriverNoQuestionAndAFailedAnswerSaysWhy) {
  Inventory fresh = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/epyc-4x5090"));
  sys::ScriptedRunner runner;
  probe::probe_gpu_memory_by_commands(runner, fresh);  // no module loaded: nvidia-smi would only fail
  EXPECT_TRUE(runner.calls().empty());

  Inventory inv = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/tinybox-6x4090"));
  runner.on({"nvidia-smi"}, sys::exited_with(9, "", "NVIDIA-SMI has failed\n"));
  probe::probe_gpu_memory_by_commands(runner, inv);
  EXPECT_TRUE(inv.gpu_memory.empty());
  EXPECT_EQ(inv.gpu_memory_source, "nvidia-smi exit 9");
  // The table then judges, as before.
  EXPECT_EQ(find(checks::check_rebar_aperture(Profile{}, inv), "0000:42:00.0")->severity, Severity::ok);
}
