// driver.options and driver.conflicts: one modprobe.d file written, blacklists reported or commented out.
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

TEST(DriverOptions, RenderQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(render_modprobe_conf({}), "");
  EXPECT_EQ(render_modprobe_conf({{"NVreg_A", "1"}, {"NVreg_B", "\"x=1;y=2\""}}),
            "# Written by p2pnode from the profile's driver.options; `p2pnode apply` rewrites it.\n"
            "options nvidia NVreg_A=1 NVreg_B=\"x=1;y=2\"\n");
}

TEST(DriverOptions, WritesOneFileAndRefusesAWrongP2PType) {
  Box box;
  box.write("etc/modprobe.d/old.conf", "options nvidia NVreg_RegistryDwords=\"RMForceP2PType=1\"\n");
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  Profile p;
  DriverSpec d;
  d.version = "550.90.07";
  d.module_options = {{"NVreg_EnableResizableBar", "1"}, {"NVreg_RegistryDwords", "ForceP2P=17;RMForceP2PType=2"}};
  p.driver = d;
  Inventory inv;
  auto action = make_driver_options();
  ASSERT_EQ(action->plan(p, inv, root).size(), 1u);
  ApplyContext ctx{root, runner, p};
  auto r = action->apply(ctx, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  EXPECT_EQ(*root.read_text(kModprobeConf),
            "# Written by p2pnode from the profile's driver.options; `p2pnode apply` rewrites it.\n"
            "options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords=\"ForceP2P=17;RMForceP2PType=2\"\n");
  EXPECT_NE(r[0].message.find("old.conf sets NVreg_RegistryDwords"), std::string::npos) << r[0].message;
  EXPECT_TRUE(action->plan(p, inv, root).empty());

  p.driver->module_options["NVreg_RegistryDwords"] = "RMForceP2PType=1";
  ApplyContext ctx2{root, runner, p};
  r = action->apply(ctx2, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::refused);
  EXPECT_NE(r[0].message.find("MAILBOXP2P"), std::string::npos) << r[0].message;
}

TEST(DriverOptions, BlacklistsAreReportedOrCommentedOutAsTheProfileSays) {
  Box box;
  const std::string file = "blacklist nouveau\nblacklist nvidia\ninstall nvidia_uvm /bin/false\n";
  box.write("etc/modprobe.d/leftover.conf", file);
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  Profile p;
  DriverSpec d;
  d.version = "550.90.07";
  p.driver = d;
  Inventory inv;
  auto action = make_driver_options();

  // report (the default): no step, the file untouched, the apply message names each line.
  EXPECT_TRUE(action->plan(p, inv, root).empty());
  ApplyContext ctx{root, runner, p};
  auto r = action->apply(ctx, inv);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::unchanged);
  EXPECT_NE(r[0].message.find("leftover.conf:2 'blacklist nvidia' keeps nvidia from loading"), std::string::npos)
      << r[0].message;
  EXPECT_EQ(*root.read_text("/etc/modprobe.d/leftover.conf"), file);

  // remove: one step for the file; apply comments out the two lines, keeps nouveau's.
  p.driver->conflicts = ConflictPolicy::remove;
  const auto steps = action->plan(p, inv, root);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].subject, "/etc/modprobe.d/leftover.conf");
  EXPECT_EQ(steps[0].details["lines"].size(), 2u);
  ApplyContext ctx2{root, runner, p};
  r = action->apply(ctx2, inv);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].outcome, StepOutcome::changed) << r[1].message;
  EXPECT_EQ(*root.read_text("/etc/modprobe.d/leftover.conf"),
            "blacklist nouveau\n# disabled by p2pnode (driver.conflicts: remove): blacklist nvidia\n"
            "# disabled by p2pnode (driver.conflicts: remove): install nvidia_uvm /bin/false\n");
  EXPECT_TRUE(action->plan(p, inv, root).empty());  // idempotent
  ApplyContext ctx3{root, runner, p};
  r = action->apply(ctx3, inv);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].writes, 0u);
}

}  // namespace
}  // namespace p2pnode::actions
