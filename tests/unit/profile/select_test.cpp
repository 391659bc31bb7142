// Profile selection: exactly one profile's match must select the box; none or several is a clear error.
#include "profile/select.hpp"

#include <gtest/gtest.h>

#include "probe/probe.hpp"
#include "profile/loader.hpp"
#include "sys/sysroot.hpp"
#include "unit/fixture_inventory.hpp"
#include "unit/source_files.hpp"

using namespace p2pnode;
using namespace p2pnode::profile;

namespace {
using p2pnode::test_files::kSrcDir;

using p2pnode::test_files::probe_fixture;

std::vector<Profile> bundled() {
  auto r = load_profiles_dir(kSrcDir + "/profiles");
  EXPECT_TRUE(r.failures.empty());
  return r.profiles;
}

Profile named(std::string name, std::optional<int> count, std::vector<std::uint16_t> devices = {}) {
  Profile p;
  p.name = std::move(name);
  p.source_file = p.name + ".yaml";
  GpuMatch g;
  g.vendor = 0x10de;
  g.count = count;
  g.devices = std::move(devices);
  p.match.gpus = g;
  return p;
}
}  // namespace

TEST(SelectProfile, EachBundledFixtureSelectsItsProfile) {
  const auto profiles = bundled();
  const std::vector<std::pair<std::string, std::string>> cases{{"h100-1gpu", "h100-1gpu"},
                                                               {"tinybox-6x4090", "tinybox-6x4090"},
                                                               {"tinybox-6x4090-bios-default", "tinybox-6x4090"},
                                                               {"epyc-8x4090-numa", "epyc-8x4090"},
                                                               {"epyc-8x4090-4nvme", "epyc-8x4090"},
                                                               {"rtx3090-nvme", "rtx3090-nvme"}};
  for (const auto& [fixture, want] : cases) {
    const auto r = select_profile(profiles, probe_fixture(fixture));
    ASSERT_TRUE(r.ok()) << fixture << ": " << r.error().message;
    EXPECT_EQ((*r)->name, want) << fixture;
  }
}

TEST(SelectProfile, NoneMatchingSaysWhyForEachProfile) {
  const auto inv = probe_fixture("tinybox-6x4090");  // 6 × 4090, hostname tiny14
  const std::vector<Profile> profiles{named("eight", 8, {0x2684}), named("h100", 1, {0x2330})};
  const auto r = select_profile(profiles, inv);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "no profile matches this box (tiny14, 6 GPUs):\n"
            "  eight (eight.yaml): wants 8 GPUs 0x2684, found 6\n"
            "  h100 (h100.yaml): wants 1 GPUs 0x2330, found 0");
}

TEST(SelectProfile, TwoMatchingIsAnErrorNamingBoth) {
  const auto inv = probe_fixture("tinybox-6x4090");
  const std::vector<Profile> profiles{named("a", 6), named("b", std::nullopt, {0x2684})};
  const auto r = select_profile(profiles, inv);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "2 profiles match this box; make their match sections exclusive:\n  a (a.yaml)\n  b (b.yaml)");
}

TEST(SelectProfile, EmptyListIsAnError) {
  const auto r = select_profile({}, probe_fixture("h100-1gpu"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "no profiles to choose from");
}

TEST(SelectProfile, HostnameAndDmiGlobs) {
  auto inv = probe_fixture("tinybox-6x4090");
  Profile p = named("t", 6);
  p.match.hostname = "tiny*";
  EXPECT_TRUE(match_mismatches(p, inv).empty());
  p.match.hostname = "gpu-*";
  EXPECT_EQ(match_mismatches(p, inv), (std::vector<std::string>{"hostname 'tiny14' does not match 'gpu-*'"}));
  p.match.hostname.reset();
  inv.dmi["board_name"] = "ROMED8-2T";
  p.match.dmi["board_name"] = "ROMED8*";
  EXPECT_TRUE(match_mismatches(p, inv).empty());
  p.match.dmi["sys_vendor"] = "Supermicro";
  inv.dmi.erase("sys_vendor");
  EXPECT_EQ(match_mismatches(p, inv), (std::vector<std::string>{"dmi sys_vendor '' does not match 'Supermicro'"}));
}

TEST(SelectProfile, NoCountMeansAtLeastOne) {
  const auto inv = probe_fixture("h100-1gpu");
  EXPECT_TRUE(match_mismatches(named("any", std::nullopt), inv).empty());
  EXPECT_EQ(match_mismatches(named("4090s", std::nullopt, {0x2684}), inv),
            (std::vector<std::string>{"wants GPUs 0x2684, found none"}));
}
