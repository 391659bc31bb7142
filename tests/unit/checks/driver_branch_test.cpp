// driver.branch on the recorded 5090 box: the profile's branch against the GPUs' architecture,
// and the module step that plan and apply refuse before anything is downloaded.
#include <gtest/gtest.h>

#include "actions/driver_install.hpp"
#include "checks/check.hpp"
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
                               "is 570"), std::string::npos) << fs[0].summary;
  EXPECT_NE(fs[0].summary.find("(4 GPUs)"), std::string::npos);
  EXPECT_EQ(fs[0].expected["branch_at_least"], 570);
  EXPECT_EQ(fs[0].observed["not_driven"].size(), 4u);

  p.driver->version = "570.148.08";
  fs = checks::check_driver_branch(p, inv);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::ok) << fs[0].summary;
  EXPECT_EQ(fs[0].summary, "driver 570.148.08 drives every GPU (Blackwell (GB20x))");
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
  EXPECT_EQ(steps[0].description.rfind("refused: 0000:01:00.0: driver 550.90.07 (branch 550) cannot drive 10de:2b85", 0), 0u)
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
