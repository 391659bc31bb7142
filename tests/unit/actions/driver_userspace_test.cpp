// driver.userspace_installer: the .run installer run once from p2pnode's own checked copy, with flags
// of the grammar only.
#include <gtest/gtest.h>
#include <lzma.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "actions/driver_install.hpp"
#include "driver_fixture.hpp"
#include "lifecycle/artifact.hpp"

namespace p2pnode::actions {
namespace {
namespace fs = std::filesystem;

// A profile whose driver.userspace_installer is the file at `path` in the box, its sha256 as read.
Profile installer_profile(const sys::SysRoot& root, const std::string& path, std::vector<std::string> flags = {}) {
  Artifact a;
  a.path = path;
  a.sha256 = *lifecycle::sha256_file(root, path);
  DriverSpec d;
  d.version = "550.90.07";
  d.userspace_installer = a;
  d.installer_flags = std::move(flags);
  Profile p;
  p.driver = d;
  return p;
}

TEST(DriverUserspace, RunsTheInstallerOnceWithItsFlags) {
  Box box;
  box.write("srv/NVIDIA-Linux-x86_64-550.90.07.run", "#!/bin/sh\n");
  box.write("usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "");
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  runner.on({"sh"}, [&](const sys::Command&) {
    box.write("usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07", "");
    return sys::exited_with(0);
  });
  const Profile p = installer_profile(root, "/srv/NVIDIA-Linux-x86_64-550.90.07.run", {"--no-drm"});
  const std::string sha256 = p.driver->userspace_installer->sha256;
  Inventory inv;
  auto action = make_driver_userspace();
  ASSERT_EQ(action->plan(p, inv, root).size(), 1u);
  ApplyContext ctx{root, runner, p};
  auto r = action->apply(ctx, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  ASSERT_EQ(runner.calls().size(), 1u);
  // The installer runs from p2pnode's own copy, the one whose sha256 was checked.
  EXPECT_EQ(runner.calls()[0],
            (std::vector<std::string>{"sh",
                                      root.host_path("/var/lib/p2pnode/artifacts/local/" + sha256.substr(0, 16) +
                                                     "-NVIDIA-Linux-x86_64-550.90.07.run")
                                          .string(),
                                      "--silent", "--no-kernel-modules", "--no-drm"}));
  EXPECT_TRUE(action->plan(p, inv, root).empty());
}

TEST(DriverUserspace, AnInstallerOfTheWrongVersionFails) {
  Box box;
  box.write("srv/x.run", "#!/bin/sh\n");
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  runner.on({"sh"}, [&](const sys::Command&) {
    box.write("usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "");
    return sys::exited_with(0);
  });
  const Profile p = installer_profile(root, "/srv/x.run");
  ApplyContext ctx{root, runner, p};
  auto r = make_driver_userspace()->apply(ctx, Inventory{});
  EXPECT_EQ(r[0].outcome, StepOutcome::failed);
  EXPECT_NE(r[0].message.find("no libcuda.so.550.90.07 appeared"), std::string::npos) << r[0].message;
}

// A flag outside the grammar (a profile built in code, not read by the loader) is refused where it
// would reach root's argv, before anything is fetched or run.
TEST(DriverUserspace, AFlagOutsideTheGrammarIsRefusedBeforeTheInstallerRuns) {
  Box box;
  box.write("srv/x.run", "#!/bin/sh\n");
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  const Profile p = installer_profile(root, "/srv/x.run", {"--no-drm", "--log-file-name=/etc/shadow"});
  ApplyContext ctx{root, runner, p};
  auto r = make_driver_userspace()->apply(ctx, Inventory{});
  EXPECT_EQ(r[0].outcome, StepOutcome::refused);
  EXPECT_NE(r[0].message.find("--log-file-name=/etc/shadow"), std::string::npos) << r[0].message;
  EXPECT_TRUE(runner.calls().empty());
  EXPECT_FALSE(root.exists("/var/lib/p2pnode/artifacts"));
}

}  // namespace
}  // namespace p2pnode::actions
