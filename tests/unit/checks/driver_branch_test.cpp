// driver.branch on the recorded 5090 box: the profile's branch against the GPUs' architecture,
// and the module step that plan and apply refuse before anything is downloaded.
#include <gtest/gtest.h>

#include "actions/driver_install.hpp"
#include "checks/check.hpp"
#include "nvidia/gpu_arch.hpp"
#include "probe/probe.hpp"
#include "profile/loader.hpp"
#include "sys/command_runner.hpp"
#include "unit/source_files.hpp"

using namespace p2pnode;

namespace {
using p2pnode::test_files::kSrcDir;

Profile load(const std::string& rel) {
  auto r = profile::load_profile_file(kSrcDir + "/" + rel);
  EXPECT_TRUE(r.profile) << r.diagnostics.format();
  return r.profile.value_or(Profile{});
}
}  // namespace

TEST(DriverBranch, A5090BoxWith550IsAnErrorNamingBranch570) {
  const sys::SysRoot root(kSrcDir + "/tests/fixtures/epyc-4x5090");
  const Inventory inv = probe::probe_inventory(root);
  Profile p = load("tests/profiles/four-5090-550.yaml");
  auto fs = checks::check_driver_branch(p, inv);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::error);
  EXPECT_NE(fs[0].summary.find("cannot drive 10de:2b85, a Blackwell (GB20x) GPU: the first branch that supports it "
                               "is 570"),
            std::string::npos)
      << fs[0].summary;
  EXPECT_NE(fs[0].summary.find("(4 GPUs)"), std::string::npos);
  EXPECT_EQ(fs[0].expected["branch_at_least"], 570);
  EXPECT_EQ(fs[0].observed["not_driven"].size(), 4u);

  // 570 drives the 5090, but tinygrad's 570.148.08-p2p leaves its P2P disabled: the branch table says so.
  p.driver->version = "570.148.08";
  fs = checks::check_driver_branch(p, inv);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].severity, Severity::ok) << fs[0].summary;
  EXPECT_EQ(fs[0].summary, "driver 570.148.08 drives every GPU (Blackwell (GB20x))");
  EXPECT_EQ(fs[1].subject, "p2p");
  EXPECT_EQ(fs[1].severity, Severity::error);
}

// The P2P branch table on the recorded 5090 box: aikitoria's 570.86.16-p2p is a 4090 tree (its
// README: "P2P for 4090"); the check names 575.64.05-p2p, the first branch that brings P2P to the
// 5090, and plan and apply refuse before any download. 575.64.05 passes.
TEST(DriverBranch, A5090BoxWith57086IsAnErrorNaming57564) {
  const sys::SysRoot fixture(kSrcDir + "/tests/fixtures/epyc-4x5090");
  const Inventory inv = probe::probe_inventory(fixture);
  Profile p = load("tests/profiles/four-5090-550.yaml");
  p.driver->version = "570.86.16";
  auto fs = checks::check_driver_branch(p, inv);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].severity, Severity::ok);  // 570 drives the 5090
  EXPECT_EQ(fs[1].severity, Severity::error);
  EXPECT_EQ(
      fs[1].summary,
      "the P2P branch of 570.86.16 does not bring P2P to 10de:2b85 (RTX 5090 / GB202): aikitoria's 570.86.16-p2p is "
      "a 4090 tree (its README: \"P2P for 4090\"), and tinygrad's 570.124.06/570.148.08-p2p leave 5090 P2P disabled "
      "(tinygrad#42, #44); the first branch that does is aikitoria's 575.64.05-p2p (575.64.05 or later) (4 GPUs)");
  EXPECT_EQ(fs[1].observed["without_p2p"].size(), 4u);
  EXPECT_NE(fs[1].remediation.find("595.71.05-p2p or 610.57.04-p2p"), std::string::npos) << fs[1].remediation;

  auto action = actions::make_driver_module();
  const auto steps = action->plan(p, inv, fixture);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].description.rfind("refused: 0000:01:00.0: the P2P branch of 570.86.16 does not bring P2P", 0), 0u)
      << steps[0].description;
  sys::ScriptedRunner runner;
  actions::ApplyContext ctx{fixture, runner, p};
  const auto r = action->apply(ctx, inv);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::refused);
  EXPECT_TRUE(runner.calls().empty());

  // A supporting release passes the branch check; what is known of a 5090 that drives a monitor is a note
  // (no release is known to fix it for GB202), on every release, with its sources.
  p.driver->version = "575.64.05";
  fs = checks::check_driver_branch(p, inv);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[1].severity, Severity::ok) << fs[1].summary;
  EXPECT_EQ(fs[1].summary, "the P2P branch of 575.64.05 brings P2P to every GPU (RTX 5090 / GB202)");
  EXPECT_EQ(fs[1].observed["display_attached_5090"],
            "a 5090 that drives a monitor breaks P2P between 5090s (aikitoria#9, #11, open); a display-aware BAR1 for "
            "GB202 was proposed on 610.43.03-p2p (aikitoria PR #34, #36), and that branch's README credits display "
            "support to GB206 only");
  EXPECT_EQ(fs[1].observed["cards"]["RTX 5090 / GB202"]["source"],
            "aikitoria's 575.64.05-p2p README (\"NVIDIA driver 575.64.05 with P2P for 4090 and 5090\")");
  p.driver->version = "610.43.03";
  EXPECT_TRUE(checks::check_driver_branch(p, inv)[1].observed.contains("display_attached_5090"));
}

TEST(DriverBranch, BranchTableByCard) {
  EXPECT_EQ(nvidia::branch_cannot_bring_p2p(0x2684, "550.90.07"), std::nullopt);  // 4090: tinygrad's 550.90.07-p2p
  EXPECT_EQ(nvidia::branch_cannot_bring_p2p(0x2684, "570.86.16"), std::nullopt);  // aikitoria's 4090 tree
  EXPECT_EQ(nvidia::branch_cannot_bring_p2p(0x2204, "565.57.01"), std::nullopt);  // 3090
  EXPECT_NE(nvidia::branch_cannot_bring_p2p(0x2b85, "570.124.06"), std::nullopt);
  EXPECT_EQ(nvidia::branch_cannot_bring_p2p(0x2b85, "580.105.08"), std::nullopt);
  // RTX PRO 6000 Blackwell from 595.71.05-p2p (its README), GB206 pairs from 580.95.05-p2p (aikitoria#12).
  const auto pro = nvidia::branch_cannot_bring_p2p(0x2bb1, "580.95.05");
  ASSERT_TRUE(pro);
  EXPECT_NE(pro->find("aikitoria's 595.71.05-p2p"), std::string::npos) << *pro;
  EXPECT_EQ(nvidia::branch_cannot_bring_p2p(0x2bb1, "595.71.05"), std::nullopt);
  EXPECT_EQ(nvidia::branch_cannot_bring_p2p(0x2bb1, "610.43.03"), std::nullopt);
  EXPECT_NE(nvidia::branch_cannot_bring_p2p(0x2d04, "575.64.05"), std::nullopt);
  EXPECT_EQ(nvidia::branch_cannot_bring_p2p(0x2d04, "580.95.05"), std::nullopt);
  EXPECT_EQ(nvidia::branch_cannot_bring_p2p(0x2d04, "610.57.04"), std::nullopt);
  for (const std::uint16_t id : std::initializer_list<std::uint16_t>{0x2204, 0x2684, 0x2bb1, 0x2b85, 0x2d04}) {
    EXPECT_FALSE(nvidia::find_p2p_card(id)->source.empty()) << id;
  }
  EXPECT_EQ(nvidia::branch_cannot_bring_p2p(0x2330, "550.90.07"), std::nullopt);  // H100: native, not in the table
  EXPECT_EQ(compare_driver_versions("570.86.16", "575.64.05"), -1);
  EXPECT_EQ(compare_driver_versions("610.43.03", "610.43.03"), 0);
  EXPECT_EQ(compare_driver_versions("570.190", "570.86.16"), 1);
}

// A box that pairs a 4090 with 5090s is told that the module alone does not make them peer.
TEST(DriverBranch, MixedGenerationsAreToldWhatTheyNeed) {
  Inventory inv = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/epyc-4x5090"));
  for (auto& d : inv.devices) {
    if (d.bdf == "0000:01:00.0") { d.device = 0x2684; }
  }
  Profile p = load("tests/profiles/four-5090-550.yaml");
  p.driver->version = "575.64.05";
  const auto fs = checks::check_driver_branch(p, inv);
  ASSERT_EQ(fs.size(), 3u);
  EXPECT_EQ(fs[2].subject, "generations");
  EXPECT_EQ(fs[2].severity, Severity::warning);
  EXPECT_NE(fs[2].summary.find("mixes GPU generations (Ada and Blackwell)"), std::string::npos) << fs[2].summary;
  EXPECT_NE(fs[2].summary.find("aikitoria's 610.57.04-p2p ships patch-libcuda-p2p.py"), std::string::npos)
      << fs[2].summary;
}

TEST(DriverBranch, WithoutAProfileDriverTheLoadedModuleIsJudged) {
  const sys::SysRoot root(kSrcDir + "/tests/fixtures/tinybox-6x4090");
  const Inventory inv = probe::probe_inventory(root);
  Profile none;
  auto fs = checks::check_driver_branch(none, inv);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::ok);
  EXPECT_EQ(fs[0].observed["from"], "loaded module");
  EXPECT_EQ(fs[0].observed["version"], "550.90.07");
  // No driver named and none loaded: nothing to judge.
  const Inventory fresh = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/epyc-4x5090"));
  EXPECT_TRUE(checks::check_driver_branch(none, fresh).empty());
}

TEST(DriverBranch, PlanAndApplyRefuseTheModuleStepBeforeAnyDownload) {
  const sys::SysRoot fixture(kSrcDir + "/tests/fixtures/epyc-4x5090");
  const Inventory inv = probe::probe_inventory(fixture);
  const Profile p = load("tests/profiles/four-5090-550.yaml");
  auto action = actions::make_driver_module();
  const auto steps = action->plan(p, inv, fixture);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].needs_operator);
  EXPECT_EQ(
      steps[0].description.rfind("refused: 0000:01:00.0: driver 550.90.07 (branch 550) cannot drive 10de:2b85", 0), 0u)
      << steps[0].description;

  // apply: refused, and no command ran (no git clone, no dkms) and nothing was written.
  sys::ScriptedRunner runner;
  actions::ApplyContext ctx{fixture, runner, p};
  const auto r = action->apply(ctx, inv);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::refused);
  EXPECT_NE(r[0].message.find("first branch that supports it is 570"), std::string::npos) << r[0].message;
  EXPECT_TRUE(runner.calls().empty());
  EXPECT_EQ(r[0].writes, 0u);
}

// An RTX PRO 6000 Blackwell beside RTX 5090s (the recorded 5090 box, one card swapped) on aikitoria's
// 595.71.05-p2p: one generation, different models, every pair peering (that branch's README shows
// 1 PRO 6000 + 8 5090s): gpu.models and driver.branch pass. Before 595.71.05-p2p the mix is an error
// naming the branch; a 4090 among them is a warning (mixed generations), never a claim of no P2P.
TEST(DriverBranch, AProSixThousandBeside5090sOn59571Passes) {
  Inventory inv = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/epyc-4x5090"));
  for (auto& d : inv.devices) {
    if (d.bdf == "0000:01:00.0") { d.device = 0x2bb1; }
  }
  Profile p = load("tests/profiles/four-5090-550.yaml");
  p.driver->version = "595.71.05";
  p.match.gpus->devices = {0x2b85, 0x2bb1};
  auto branch = checks::check_driver_branch(p, inv);
  for (const auto& f : branch) { EXPECT_EQ(f.severity, Severity::ok) << f.subject << ": " << f.summary; }
  ASSERT_EQ(branch.size(), 2u);
  EXPECT_EQ(branch[1].summary,
            "the P2P branch of 595.71.05 brings P2P to every GPU (RTX 5090 / GB202, RTX PRO 6000 Blackwell)");
  auto models = checks::check_gpu_models(p, inv);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].severity, Severity::ok) << models[0].summary;
  EXPECT_NE(
      models[0].summary.find("different models of one generation (Blackwell) peer from aikitoria's 595.71.05-p2p on "
                             "(its README)"),
      std::string::npos)
      << models[0].summary;

  p.driver->version = "580.95.05";
  models = checks::check_gpu_models(p, inv);
  EXPECT_EQ(models[0].severity, Severity::error);
  EXPECT_NE(
      models[0].summary.find("they peer only from aikitoria's 595.71.05-p2p on (its README); on 580.95.05-p2p they "
                             "did not (aikitoria#13)"),
      std::string::npos)
      << models[0].summary;
  branch = checks::check_driver_branch(p, inv);
  EXPECT_EQ(branch[1].severity, Severity::error);
  EXPECT_NE(branch[1].summary.find("the first branch that does is aikitoria's 595.71.05-p2p"), std::string::npos)
      << branch[1].summary;

  for (auto& d : inv.devices) {
    if (d.bdf == "0000:01:00.0") { d.device = 0x2684; }
  }
  p.match.gpus->devices = {0x2b85, 0x2684};
  p.driver->version = "610.57.04";
  models = checks::check_gpu_models(p, inv);
  EXPECT_EQ(models[0].severity, Severity::warning);
  EXPECT_NE(models[0].summary.find("mixed GPU generations (Ada and Blackwell)"), std::string::npos)
      << models[0].summary;
  EXPECT_NE(models[0].remediation.find("patch-libcuda-p2p.py"), std::string::npos);
}
