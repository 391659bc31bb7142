// driver.module when `dkms status` does not answer (a loaded box): DKMS's state is unknown, so
// nothing is built on a guess and nothing built is undone.
#include <gtest/gtest.h>

#include <algorithm>

#include "driver_fixture.hpp"
#include "lifecycle/dkms_run.hpp"

namespace p2pnode::actions {
namespace {

std::size_t count_calls(const sys::ScriptedRunner& runner, const std::string& verb) {
  return static_cast<std::size_t>(std::count_if(runner.calls().begin(), runner.calls().end(), [&](const auto& c) {
    return c.size() > 1 && c[0] == "dkms" && c[1] == verb;
  }));
}

TEST(DriverModuleDkmsStatus, NoAnswerBeforeTheBuildBuildsNothing) {
  ModuleBench b;
  b.dkms.status_hang_from = 0;
  const auto r = apply_module_once(b, module_profile(b.box));
  EXPECT_EQ(r.outcome, StepOutcome::failed);
  EXPECT_NE(r.message.find("DKMS's state is unknown, nothing was built: `dkms status -m p2ptest` timed out"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(count_calls(b.runner, "add"), 0u);
  EXPECT_EQ(b.dkms.builds, 0);
  EXPECT_FALSE(b.root.exists("/usr/src/p2ptest-1.5"));
}

TEST(DriverModuleDkmsStatus, AFailedStatusNamesDkmsLastLine) {
  ModuleBench b;
  b.dkms.status_error = "Warning: something\nError! Could not read /var/lib/dkms\n\n";
  const auto r = apply_module_once(b, module_profile(b.box));
  EXPECT_EQ(r.outcome, StepOutcome::failed);
  EXPECT_NE(r.message.find("`dkms status -m p2ptest` exit 1: Error! Could not read /var/lib/dkms"), std::string::npos)
      << r.message;
  EXPECT_EQ(b.dkms.builds, 0);
}

TEST(DriverModuleDkmsStatus, NoAnswerAfterTheInstallUndoesNothing) {
  ModuleBench b;
  b.dkms.status_hang_from = 1;  // the first call answers, the check after the install does not
  const auto r = apply_module_once(b, module_profile(b.box));
  EXPECT_EQ(r.outcome, StepOutcome::failed);
  EXPECT_NE(r.message.find("DKMS built and installed it for [\"" + std::string(kKernel) +
                           "\"] but could not confirm it: `dkms status -m p2ptest -v 1.5` timed out"),
            std::string::npos)
      << r.message;
  // What was built stays: no `dkms remove`, the source and the module in place.
  EXPECT_EQ(b.dkms.builds, 1);
  EXPECT_EQ(b.dkms.removes, 0);
  EXPECT_TRUE(b.root.exists("/usr/src/p2ptest-1.5/dkms.conf"));
  EXPECT_TRUE(b.root.exists(std::string("/lib/modules/") + kKernel + "/updates/dkms/p2ptest.ko"));

  // DKMS answers again: the next apply finds it installed and builds nothing more.
  b.dkms.status_hang_from = -1;
  const auto again = apply_module_once(b, module_profile(b.box));
  EXPECT_EQ(again.outcome, StepOutcome::unchanged) << again.message;
  EXPECT_EQ(b.dkms.builds, 1);
}

}  // namespace
}  // namespace p2pnode::actions
