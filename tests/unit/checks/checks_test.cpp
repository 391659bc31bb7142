// The checks as pure functions of (Profile, Inventory): recorded fixtures, then the same inventory
// bent by hand into the cases a golden file cannot show one at a time.
#include "checks/check.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "probe/probe.hpp"
#include "profile/loader.hpp"
#include "sys/sysroot.hpp"
#include "unit/fixture_inventory.hpp"
#include "unit/source_files.hpp"

using namespace p2pnode;
using namespace p2pnode::checks;

namespace {
using p2pnode::test_files::kSrcDir;

using p2pnode::test_files::probe_fixture;

Profile profile_file(const std::string& rel) {
  auto r = profile::load_profile_file(kSrcDir + "/" + rel);
  EXPECT_TRUE(r.profile) << r.diagnostics.format();
  return r.profile.value_or(Profile{});
}

const Finding* find(const std::vector<Finding>& fs, const std::string& check, const std::string& subject) {
  for (const auto& f : fs) {
    if (f.check == check && f.subject == subject) { return &f; }
  }
  return nullptr;
}

PciDevice* mut(Inventory& inv, const std::string& bdf) {
  for (auto& d : inv.devices) {
    if (d.bdf == bdf) { return &d; }
  }
  return nullptr;
}
}  // namespace

TEST(Checks, RegistryHasStableUniqueIds) {
  std::vector<std::string> ids;
  for (const auto& c : all_checks()) {
    ids.emplace_back(c.id);
    EXPECT_FALSE(c.description.empty()) << c.id;
    EXPECT_NE(c.run, nullptr);
  }
  for (const char* want : {"rebar.aperture", "rebar.capability", "iommu.mode", "iommu.noiommu_support", "pcie.acs",
                           "pcie.link", "pcie.topology", "gpu.models", "driver.state"}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), want), ids.end()) << want;
  }
  auto sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

TEST(Checks, RealH100PassesWithItsProfile) {
  const auto inv = probe_fixture("h100-1gpu");
  const auto fs = run_all_checks(profile_file("profiles/h100-1gpu.yaml"), inv);
  ASSERT_FALSE(fs.empty());
  for (const auto& f : fs) { EXPECT_EQ(f.severity, Severity::ok) << f.check << " " << f.subject << ": " << f.summary; }
  const Finding* cap = find(fs, "rebar.capability", "0000:00:06.0");
  ASSERT_NE(cap, nullptr);
  EXPECT_EQ(cap->observed["capability"], "hidden");  // virtualised: masked, not absent
  EXPECT_THAT(cap->summary, ::testing::HasSubstr("hidden"));
}

TEST(Checks, BiosDefaultBoxHasApertureIommuAndAcsErrors) {
  const auto inv = probe_fixture("tinybox-6x4090-bios-default");
  const auto fs = run_all_checks(profile_file("profiles/tinybox-6x4090.yaml"), inv);
  const Finding* ap = find(fs, "rebar.aperture", "0000:01:00.0");
  ASSERT_NE(ap, nullptr);
  EXPECT_EQ(ap->severity, Severity::error);
  EXPECT_THAT(ap->remediation, ::testing::HasSubstr("Above 4G Decoding"));
  EXPECT_THAT(ap->remediation, ::testing::HasSubstr("Resizable BAR"));
  const Finding* io = find(fs, "iommu.mode", "node");
  ASSERT_NE(io, nullptr);
  EXPECT_EQ(io->severity, Severity::error);
  EXPECT_THAT(io->remediation, ::testing::HasSubstr("512 MiB"));
  const bool acs_error = std::any_of(
      fs.begin(), fs.end(), [](const Finding& f) { return f.check == "pcie.acs" && f.severity == Severity::error; });
  EXPECT_TRUE(acs_error);
  EXPECT_EQ(worst(fs), Severity::error);
}

TEST(Checks, ApertureBelowVramButAbove4GSaysResizeNotAbove4G) {
  auto inv = probe_fixture("rebar-not-resized");
  const auto fs = check_rebar_aperture(profile_file("tests/profiles/two-4090.yaml"), inv);
  const Finding* f = find(fs, "rebar.aperture", "0000:01:00.0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::error);
  EXPECT_EQ(f->remediation.find("The aperture sits below 4 GiB"), std::string::npos);
  EXPECT_THAT(f->remediation, ::testing::HasSubstr("resource1_resize"));
  const auto caps = check_rebar_capability(profile_file("tests/profiles/two-4090.yaml"), inv);
  const Finding* c = find(caps, "rebar.capability", "0000:01:00.0");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->severity, Severity::ok);
  EXPECT_THAT(c->summary, ::testing::HasSubstr("supports 32 GiB"));
}

TEST(Checks, ProfileVramOverridesTheTableAndUnknownGpusWarn) {
  auto inv = probe_fixture("tinybox-6x4090");
  Profile p = profile_file("profiles/tinybox-6x4090.yaml");
  p.platform.gpu_vram = 48 * GiB;  // as if a 48 GiB card: the 32 GiB aperture is too small
  const auto big_all = check_rebar_aperture(p, inv);
  const Finding* big = find(big_all, "rebar.aperture", "0000:01:00.0");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->severity, Severity::error);
  p.platform.gpu_vram.reset();
  mut(inv, "0000:01:00.0")->device = 0x9999;  // not in the table
  const auto unknown_all = check_rebar_aperture(p, inv);
  const Finding* unknown = find(unknown_all, "rebar.aperture", "0000:01:00.0");
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->severity, Severity::warning);
  EXPECT_THAT(unknown->remediation, ::testing::HasSubstr("platform.gpu_vram"));
}

TEST(Checks, IommuPolicies) {
  auto inv = probe_fixture("tinybox-6x4090");
  Profile p;
  auto sev = [&](IommuPolicy pol, IommuMode mode) {
    p.platform.iommu = pol;
    inv.iommu.mode = mode;
    const auto fs = check_iommu_mode(p, inv);
    const Finding* f = find(fs, "iommu.mode", "node");
    return f ? f->severity : Severity::ok;
  };
  EXPECT_EQ(sev(IommuPolicy::off, IommuMode::off), Severity::ok);
  EXPECT_EQ(sev(IommuPolicy::off, IommuMode::passthrough), Severity::error);
  EXPECT_EQ(sev(IommuPolicy::passthrough, IommuMode::passthrough), Severity::ok);
  EXPECT_EQ(sev(IommuPolicy::passthrough, IommuMode::off), Severity::error);
  EXPECT_EQ(sev(IommuPolicy::off_or_passthrough, IommuMode::off), Severity::ok);
  EXPECT_EQ(sev(IommuPolicy::off_or_passthrough, IommuMode::passthrough), Severity::ok);
  EXPECT_EQ(sev(IommuPolicy::off_or_passthrough, IommuMode::translating), Severity::error);
  EXPECT_EQ(sev(IommuPolicy::any, IommuMode::translating), Severity::ok);
}

TEST(Checks, NoiommuFixtureIsNotMistakenForAnIommu) {
  const auto inv = probe_fixture("epyc-8x4090-4nvme");
  EXPECT_TRUE(inv.iommu.noiommu_groups);
  EXPECT_EQ(inv.iommu.mode, IommuMode::off);
}

TEST(Checks, LinkBelowMaximumOrProfileMinimum) {
  auto inv = probe_fixture("tinybox-6x4090");
  Profile p = profile_file("profiles/tinybox-6x4090.yaml");
  EXPECT_EQ(find(check_pcie_link(p, inv), "pcie.link", "0000:01:00.0")->severity, Severity::ok);
  mut(inv, "0000:01:00.0")->link.current_width = 8;
  const auto x8_all = check_pcie_link(p, inv);
  const Finding* x8 = find(x8_all, "pcie.link", "0000:01:00.0");
  ASSERT_NE(x8, nullptr);
  EXPECT_EQ(x8->severity, Severity::error);
  EXPECT_THAT(x8->summary, ::testing::HasSubstr("x8 of x16"));
  mut(inv, "0000:01:00.0")->link = LinkInfo{};
  const auto none_all = check_pcie_link(p, inv);
  const Finding* none = find(none_all, "pcie.link", "0000:01:00.0");
  ASSERT_NE(none, nullptr);
  EXPECT_THAT(none->summary, ::testing::HasSubstr("not reported"));
}

TEST(Checks, MixedModelsAndCount) {
  const auto mixed = probe_fixture("mixed-4090-4060ti");
  const auto m_all = check_gpu_models(profile_file("tests/profiles/two-4090.yaml"), mixed);
  const Finding* m = find(m_all, "gpu.models", "node");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->severity, Severity::error);
  auto inv = probe_fixture("tinybox-6x4090");
  Profile p = profile_file("profiles/tinybox-6x4090.yaml");
  EXPECT_EQ(find(check_gpu_models(p, inv), "gpu.models", "node")->severity, Severity::ok);
  p.match.gpus->count = 8;
  EXPECT_EQ(find(check_gpu_models(p, inv), "gpu.models", "node")->severity, Severity::error);
}

TEST(Checks, AcsPolicyAnyOnlyWarns) {
  const auto inv = probe_fixture("tinybox-6x4090-bios-default");
  Profile p = profile_file("profiles/tinybox-6x4090.yaml");
  p.platform.acs = AcsPolicy::any;
  for (const auto& f : check_pcie_acs(p, inv)) { EXPECT_NE(f.severity, Severity::error) << f.subject; }
}

TEST(Checks, P2PTypeOptionPerDriverBranch) {
  using Opts = std::map<std::string, std::string>;
  EXPECT_EQ(p2p_type_problem({}, "550.90.07"), std::nullopt);
  EXPECT_EQ(p2p_type_problem(Opts{{"NVreg_RegistryDwords", "RMForceP2PType=2"}}, "550.90.07"), std::nullopt);
  EXPECT_TRUE(p2p_type_problem(Opts{{"NVreg_RegistryDwords", "RMForceP2PType=1"}}, "550.90.07"));
  EXPECT_EQ(p2p_type_problem(Opts{{"NVreg_RegistryDwords", "RMForceP2PType=1"}}, "580.159.04"), std::nullopt);
  EXPECT_TRUE(p2p_type_problem(Opts{{"NVreg_RegistryDwords", "RMForceP2PType=2"}}, "580.159.04"));
  EXPECT_TRUE(p2p_type_problem(Opts{{"NVreg_RegistryDwords", "\"RMForceP2PType=1;RMPcieP2PType=2\""}}, "575.51.02"));
  EXPECT_EQ(p2p_type_problem(Opts{{"NVreg_RegistryDwords", "RMForceP2PType=1"}}, ""), std::nullopt);
}

TEST(Checks, SysfsProblemsBecomeFindings) {
  Inventory inv;
  inv.problems.push_back("/sys/bus/pci/devices does not exist");
  PciDevice gpu;
  gpu.bdf = "0000:01:00.0";
  gpu.kind = DeviceKind::gpu;
  gpu.problems = {"resource: resource is empty"};
  inv.devices.push_back(gpu);
  const auto fs = check_sysfs(Profile{}, inv);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].severity, Severity::error);
  EXPECT_EQ(fs[1].subject, "0000:01:00.0");
  EXPECT_EQ(fs[1].severity, Severity::warning);
  EXPECT_FALSE(fs[1].remediation.empty());
}

TEST(Checks, EveryNonOkFindingSaysWhatToDo) {
  for (const char* fx : {"tinybox-6x4090-bios-default", "rebar-not-resized", "gpu-link-x8", "mixed-4090-4060ti"}) {
    const auto inv = probe_fixture(fx);
    for (const auto& f : run_all_checks(profile_file("tests/profiles/two-4090.yaml"), inv)) {
      if (f.severity == Severity::ok) { continue; }
      EXPECT_FALSE(f.remediation.empty()) << fx << " " << f.check << " " << f.subject;
      EXPECT_FALSE(f.summary.empty()) << fx << " " << f.check;
    }
  }
}

// A profile forced on a box (check --profile) was never matched against it: gpu.models compares its
// device ids (a 5090 profile on the recorded 6×4090 said "ok 6 × GeForce RTX 4090").
TEST(Checks, AForcedProfileForOtherGpusIsAnError) {
  const Inventory inv =
      probe::probe_inventory(sys::SysRoot(std::string(P2PNODE_SOURCE_DIR) + "/tests/fixtures/tinybox-6x4090"));
  Profile p;
  p.match.gpus = GpuMatch{0x10de, {0x2b85}, std::nullopt};
  const auto f = checks::check_gpu_models(p, inv);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_EQ(f[0].summary, "6 × GeForce RTX 4090 (10de:2684) not among the profile's device ids (0x2b85)");
  p.match.gpus->devices = {0x2684};
  EXPECT_EQ(checks::check_gpu_models(p, inv)[0].severity, Severity::ok);
}
