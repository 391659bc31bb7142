// Platform fixes on copies of recorded fixtures: the ACS fix writes only the control register and
// a second apply writes nothing; the GRUB edit adds iommu=pt, removes what conflicts, is idempotent.
#include "actions/platform_fixes.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "pci/config_space.hpp"
#include "probe/probe.hpp"
#include "unit/temp_dir.hpp"

using namespace p2pnode;
using namespace p2pnode::actions;
namespace fs = std::filesystem;

namespace {
const fs::path kFixtures = fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures";

class FixtureCopy : public ::testing::Test {
 protected:
  void copy(const std::string& name) {
    dir_ = tmp_ / name;
    fs::remove_all(dir_);
    fs::copy(kFixtures / name, dir_, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  std::string read(const std::string& rel) {
    std::ifstream in(dir_ / rel, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  p2pnode::test::TempDir tmp_{"fix"};
  fs::path dir_;
};

Profile acs_profile() {
  Profile p;
  p.name = "t";
  p.platform.acs = AcsPolicy::disabled;
  p.platform.fix_acs = true;
  return p;
}
}  // namespace

TEST_F(FixtureCopy, AcsFixAppliedTwiceWritesOnlyOnce) {
  copy("tinybox-6x4090-bios-default");
  const std::string rp_cfg = "sys/devices/pci0000:00/0000:00:01.1/config";
  const std::string before_cfg = read(rp_cfg);
  const Profile profile = acs_profile();
  const auto fix = make_acs_fix();
  EXPECT_EQ(fix->id(), "pcie.acs");

  sys::SysRoot root(dir_);
  sys::ScriptedRunner runner;
  ApplyContext ctx{root, runner, profile};
  const Inventory inv = probe::probe_inventory(root);
  const auto steps = fix->plan(profile, inv, root);
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.front().description, "clear ACS P2P redirect and egress control: control 0x001d -> 0x0001");
  const auto first = fix->apply(ctx, inv);
  ASSERT_EQ(first.size(), steps.size());
  for (const auto& r : first) {
    EXPECT_EQ(r.outcome, StepOutcome::changed) << r.subject << ": " << r.message;
    EXPECT_EQ(r.writes, 1u);
    EXPECT_EQ(r.after["control"], 0x0001);
  }
  EXPECT_EQ(root.write_count(), first.size());
  EXPECT_TRUE(runner.calls().empty());

  // Only the two bytes of the ACS control register changed.
  const std::string after_cfg = read(rp_cfg);
  ASSERT_EQ(after_cfg.size(), before_cfg.size());
  const auto acs = pci::decode_acs(std::vector<std::uint8_t>(before_cfg.begin(), before_cfg.end()));
  ASSERT_TRUE(acs);
  const auto ctl = static_cast<std::size_t>(acs->offset + 6);
  for (std::size_t i = 0; i < after_cfg.size(); ++i) {
    if (i != ctl && i != ctl + 1) { ASSERT_EQ(after_cfg[i], before_cfg[i]) << "byte " << i; }
  }

  // Second run on a fresh probe: nothing planned, nothing written.
  sys::SysRoot root2(dir_);
  ApplyContext ctx2{root2, runner, profile};
  const Inventory inv2 = probe::probe_inventory(root2);
  EXPECT_TRUE(fix->plan(profile, inv2, root2).empty());
  for (const auto& r : fix->apply(ctx2, inv2)) { EXPECT_EQ(r.writes, 0u); }
  EXPECT_EQ(root2.write_count(), 0u);
  // A stale inventory (the first one) is re-checked on the device: unchanged, no write.
  sys::SysRoot root3(dir_);
  ApplyContext ctx3{root3, runner, profile};
  for (const auto& r : fix->apply(ctx3, inv)) { EXPECT_EQ(r.outcome, StepOutcome::unchanged) << r.message; }
  EXPECT_EQ(root3.write_count(), 0u);
}

TEST_F(FixtureCopy, AcsFixDoesNothingUnlessTheProfileAllowsIt) {
  copy("tinybox-6x4090-bios-default");
  sys::SysRoot root(dir_);
  const Inventory inv = probe::probe_inventory(root);
  Profile p = acs_profile();
  p.platform.fix_acs = false;
  EXPECT_TRUE(make_acs_fix()->plan(p, inv, root).empty());
  p.platform.fix_acs = true;
  p.platform.acs = AcsPolicy::any;
  EXPECT_TRUE(make_acs_fix()->plan(p, inv, root).empty());
  // A clean box plans nothing either.
  sys::SysRoot clean(kFixtures / "tinybox-6x4090");
  EXPECT_TRUE(make_acs_fix()->plan(acs_profile(), probe::probe_inventory(clean), clean).empty());
}

TEST(RebarResize, PlansTheLargestSizeTheKernelOffers) {
  sys::SysRoot root(kFixtures / "rebar-not-resized");
  const Inventory inv = probe::probe_inventory(root);
  Profile p;
  p.platform.fix_rebar = true;
  const auto steps = make_rebar_resize()->plan(p, inv, root);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].subject, "0000:01:00.0");
  EXPECT_EQ(steps[0].description.rfind("resize BAR1 from 256 MiB to 32 GiB through resource1_resize", 0), 0u)
      << steps[0].description;
  p.platform.fix_rebar = false;
  EXPECT_TRUE(make_rebar_resize()->plan(p, inv, root).empty());
}

TEST(GrubEdit, AddsIommuPtAndRemovesConflicts) {
  bool changed = false;
  const std::string text =
      "GRUB_DEFAULT=0\n"
      "#GRUB_CMDLINE_LINUX=\"amd_iommu=off\"\n"
      "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\n"
      "GRUB_CMDLINE_LINUX=\"console=ttyS0 amd_iommu=off\"\n";
  const std::string once = edit_grub_default(text, "iommu=pt", changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(once,
            "GRUB_DEFAULT=0\n"
            "#GRUB_CMDLINE_LINUX=\"amd_iommu=off\"\n"
            "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\n"
            "GRUB_CMDLINE_LINUX=\"console=ttyS0 iommu=pt\"\n");
  const std::string twice = edit_grub_default(once, "iommu=pt", changed);
  EXPECT_FALSE(changed);
  EXPECT_EQ(twice, once);
}

TEST(GrubEdit, ConflictsInTheDefaultLineGoToo) {
  bool changed = false;
  const std::string out = edit_grub_default(
      "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash amd_iommu=off\"\nGRUB_CMDLINE_LINUX=\"\"\n", "iommu=pt", changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out, "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"iommu=pt\"\n");
  edit_grub_default(out, "iommu=pt", changed);
  EXPECT_FALSE(changed);
}

TEST(GrubEdit, KeepsIommuOnWithPassthroughAndHandlesOddForms) {
  bool changed = false;
  EXPECT_EQ(edit_grub_default("GRUB_CMDLINE_LINUX='intel_iommu=on quiet'\n", "iommu=pt", changed),
            "GRUB_CMDLINE_LINUX=\"intel_iommu=on quiet iommu=pt\"\n");
  EXPECT_TRUE(changed);
  // Going the other way: iommu=pt conflicts with amd_iommu=off.
  EXPECT_EQ(edit_grub_default("GRUB_CMDLINE_LINUX=\"iommu=pt\"\n", "amd_iommu=off", changed),
            "GRUB_CMDLINE_LINUX=\"amd_iommu=off\"\n");
  // No GRUB_CMDLINE_LINUX line at all: one is added.
  EXPECT_EQ(edit_grub_default("GRUB_TIMEOUT=5", "iommu=pt", changed),
            "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"iommu=pt\"\n");
  EXPECT_TRUE(changed);
  EXPECT_EQ(edit_grub_default("", "iommu=pt", changed), "GRUB_CMDLINE_LINUX=\"iommu=pt\"\n");
  // Already there: nothing changes.
  edit_grub_default("GRUB_CMDLINE_LINUX=\"quiet iommu=pt\"\n", "iommu=pt", changed);
  EXPECT_FALSE(changed);
}

TEST_F(FixtureCopy, KernelCmdlineFixEditsGrubOnAFixtureRootAndRunsUpdateGrub) {
  copy("tinybox-6x4090-bios-default");  // IOMMU translating
  fs::create_directories(dir_ / "etc/default");
  std::ofstream(dir_ / "etc/default/grub") << "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"quiet\"\n";
  Profile p;
  p.platform.iommu = IommuPolicy::off_or_passthrough;
  p.platform.fix_kernel_cmdline = "iommu=pt";
  sys::SysRoot root(dir_);
  sys::ScriptedRunner runner;
  runner.on({"update-grub"}, sys::exited_with(0));
  ApplyContext ctx{root, runner, p};
  const Inventory inv = probe::probe_inventory(root);
  const auto fix = make_kernel_cmdline_fix();
  const auto steps = fix->plan(p, inv, root);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].reboot_required);
  const auto results = fix->apply(ctx, inv);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::reboot_required) << results[0].message;
  EXPECT_EQ(read("etc/default/grub"), "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"quiet iommu=pt\"\n");
  EXPECT_EQ(runner.count("update-grub"), 1u);
  // Until the reboot the plan says "reboot", and applying again edits nothing.
  const auto again = fix->plan(p, inv, root);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0].description.find("reboot"), std::string::npos);
  const auto writes = root.write_count();
  (void)fix->apply(ctx, inv);
  EXPECT_EQ(root.write_count(), writes);
}

TEST_F(FixtureCopy, KernelCmdlineFixRestoresGrubWhenUpdateGrubFails) {
  copy("tinybox-6x4090-bios-default");
  fs::create_directories(dir_ / "etc/default");
  const std::string original = "GRUB_CMDLINE_LINUX=\"quiet\"\n";
  std::ofstream(dir_ / "etc/default/grub") << original;
  Profile p;
  p.platform.fix_kernel_cmdline = "iommu=pt";
  sys::SysRoot root(dir_);
  sys::ScriptedRunner runner;
  runner.on({"update-grub"}, sys::exited_with(1, "", "grub-mkconfig: error"));
  ApplyContext ctx{root, runner, p};
  const auto results = make_kernel_cmdline_fix()->apply(ctx, probe::probe_inventory(root));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::failed);
  EXPECT_NE(results[0].message.find("restored"), std::string::npos);
  EXPECT_EQ(read("etc/default/grub"), original);
}

TEST_F(FixtureCopy, UnknownBootloaderIsRefusedNotGuessed) {
  copy("tinybox-6x4090-bios-default");
  fs::remove_all(dir_ / "etc/default");
  Profile p;
  p.platform.fix_kernel_cmdline = "iommu=pt";
  sys::SysRoot root(dir_);
  sys::ScriptedRunner runner;
  ApplyContext ctx{root, runner, p};
  const Inventory inv = probe::probe_inventory(root);
  const auto steps = make_kernel_cmdline_fix()->plan(p, inv, root);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].needs_operator);
  const auto results = make_kernel_cmdline_fix()->apply(ctx, inv);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::refused);
  EXPECT_EQ(root.write_count(), 0u);
  EXPECT_TRUE(runner.calls().empty());
}
