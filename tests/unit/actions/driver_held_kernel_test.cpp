// driver.module on a box held off its newest kernel (that kernel's build failed): every later
// apply, one per boot, answers from the records without fetching and staging the source again;
// new headers retry the build.
#include <gtest/gtest.h>

#include <algorithm>

#include "driver_fixture.hpp"

namespace p2pnode::actions {
namespace {

constexpr const char* kNewKernel = "6.1.0-58-amd64";

std::size_t patch_runs(const sys::ScriptedRunner& runner) {
  return static_cast<std::size_t>(std::count_if(runner.calls().begin(), runner.calls().end(),
                                                [](const auto& c) { return !c.empty() && c[0] == "patch"; }));
}

TEST(DriverModuleHeldKernel, AFailedBuildIsAnsweredFromTheRecordsWithoutStagingAgain) {
  ModuleBench b;
  const Profile p = module_profile(b.box);
  ASSERT_EQ(apply_module_once(b, p).outcome, StepOutcome::changed);

  // A new kernel's headers arrive and its build fails.
  b.box.write(std::string("lib/modules/") + kNewKernel + "/build/.config", "CONFIG_X=y\n");
  b.dkms.build_exit = 10;
  const auto first = apply_module_once(b, p);
  EXPECT_EQ(first.outcome, StepOutcome::failed);
  EXPECT_EQ(b.dkms.builds, 2);

  // The next boots: the same answer, no build, no patch run, the source in /usr/src untouched.
  b.box.write("usr/src/p2ptest-1.5/marker", "kept\n");
  const std::size_t patches_before = patch_runs(b.runner);
  for (int boot = 0; boot < 2; ++boot) {
    const auto again = apply_module_once(b, p);
    EXPECT_EQ(again.outcome, StepOutcome::failed);
    const std::string& m = again.message;
    EXPECT_NE(m.find(std::string("build for ") + kNewKernel +
                     " not retried: it failed with the same source, patches and headers"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find(std::string("installed for [\"") + kKernel + "\"] only; a reboot into [\"" + kNewKernel +
                     "\"] would come up without p2ptest/1.5"),
              std::string::npos)
        << m;
    EXPECT_EQ(again.after["installed_kernels"], nlohmann::json::array({kKernel}));
  }
  EXPECT_EQ(b.dkms.builds, 2);
  EXPECT_EQ(patch_runs(b.runner), patches_before);
  EXPECT_TRUE(b.root.exists("/usr/src/p2ptest-1.5/marker"));

  // New headers for that kernel: built again, and this time it builds.
  b.box.write(std::string("lib/modules/") + kNewKernel + "/build/.config", "CONFIG_X=y\nCONFIG_Y=y\n");
  b.dkms.build_exit = 0;
  const auto fixed = apply_module_once(b, p);
  EXPECT_EQ(fixed.outcome, StepOutcome::changed) << fixed.message;
  EXPECT_EQ(b.dkms.builds, 3);
  EXPECT_TRUE(b.dkms.installed_kernels.count(kNewKernel));
}

}  // namespace
}  // namespace p2pnode::actions
