// The bundled profiles load into the values they say; units, ids and enums land typed.
#include "profile/loader.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include "unit/source_files.hpp"
#include "unit/temp_dir.hpp"

using namespace p2pnode;
using namespace p2pnode::profile;
namespace fs = std::filesystem;

namespace {
using p2pnode::test_files::kSrc;

Profile load_ok(const fs::path& rel) {
  auto r = load_profile_file(kSrc / rel);
  EXPECT_TRUE(r.profile) << r.diagnostics.format();
  return r.profile.value_or(Profile{});
}

const std::string kHead = "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata:\n  name: t\n";

LoadResult load(const std::string& body) { return load_profile_text(kHead + body, "t.yaml"); }
}  // namespace

TEST(ProfileLoader, EveryBundledProfileLoads) {
  for (const auto* dir : {"profiles", "tests/profiles"}) {
    const auto r = load_profiles_dir(kSrc / dir);
    EXPECT_TRUE(r.error.empty()) << r.error;
    for (const auto& f : r.failures) { ADD_FAILURE() << f.format(); }
    EXPECT_FALSE(r.profiles.empty()) << dir;
  }
}

TEST(ProfileLoader, TinyboxValues) {
  const Profile p = load_ok("profiles/tinybox-6x4090.yaml");
  EXPECT_EQ(p.name, "tinybox-6x4090");
  ASSERT_TRUE(p.match.gpus);
  EXPECT_EQ(p.match.gpus->vendor, 0x10de);
  EXPECT_EQ(p.match.gpus->devices, (std::vector<std::uint16_t>{0x2684}));
  EXPECT_EQ(p.match.gpus->count, 6);
  EXPECT_EQ(p.match.hostname, "tiny*");
  EXPECT_EQ(p.platform.iommu, IommuPolicy::off_or_passthrough);
  EXPECT_EQ(p.platform.min_link_gts, 16.0);
  EXPECT_EQ(p.platform.min_link_width, 16);
  EXPECT_TRUE(p.platform.fix_acs);
  ASSERT_TRUE(p.driver);
  EXPECT_EQ(p.driver->version, "550.90.07");
  ASSERT_TRUE(p.driver->kernel_module);
  EXPECT_EQ(p.driver->kernel_module->artifact.git, "https://github.com/tinygrad/open-gpu-kernel-modules.git");
  EXPECT_EQ(p.driver->kernel_module->artifact.branch, "550.90.07-p2p");
  EXPECT_EQ(p.driver->conflicts, ConflictPolicy::remove);
  EXPECT_TRUE(p.driver->allow_reload);
  EXPECT_EQ(p.driver->stop_units, (std::vector<std::string>{"nvidia-persistenced.service"}));
  ASSERT_TRUE(p.selftest);
  EXPECT_EQ(p.selftest->schedule, std::chrono::hours(6));
  EXPECT_EQ(p.selftest->time_limit, std::chrono::minutes(2));
  EXPECT_DOUBLE_EQ(p.selftest->min_bandwidth.at("PHB").gbps(), 22.0);
  EXPECT_EQ(p.selftest->max_latency, std::chrono::microseconds(3));
}

TEST(ProfileLoader, NvmeProfileValues) {
  const Profile p = load_ok("profiles/rtx3090-nvme.yaml");
  ASSERT_TRUE(p.nvme);
  EXPECT_TRUE(p.nvme->noiommu);
  ASSERT_EQ(p.nvme->drives.size(), 1u);
  EXPECT_EQ(p.nvme->drives[0].serial, "21165N801234");
  EXPECT_EQ(p.nvme->drives[0].driver, "vfio-pci");
  EXPECT_EQ(p.nvme->drives[0].pair_gpu, "0000:0a:00.0");
  EXPECT_EQ(p.platform.iommu, IommuPolicy::off);
  EXPECT_EQ(p.platform.acs, AcsPolicy::any);
}

TEST(ProfileLoader, DefaultsWhenSectionsAreAbsent) {
  const auto r = load("");
  ASSERT_TRUE(r.profile) << r.diagnostics.format();
  EXPECT_EQ(r.profile->platform.iommu, IommuPolicy::off_or_passthrough);
  EXPECT_EQ(r.profile->platform.resizable_bar, RebarPolicy::required);
  EXPECT_FALSE(r.profile->driver);
  EXPECT_FALSE(r.profile->nvme);
  EXPECT_EQ(r.profile->source_file, "t.yaml");
}

TEST(ProfileLoader, PciIdsInEveryWrittenForm) {
  const auto r = load("match:\n  gpus:\n    vendor: \"10de\"\n    devices: [0x2684, \"0x2204\", 8836]\n");
  ASSERT_TRUE(r.profile) << r.diagnostics.format();
  EXPECT_EQ(r.profile->match.gpus->vendor, 0x10de);
  EXPECT_EQ(r.profile->match.gpus->devices, (std::vector<std::uint16_t>{0x2684, 0x2204, 8836}));
}

TEST(ProfileLoader, SizesBandwidthsDurations) {
  const auto r = load(
      "platform:\n  gpu_vram: 24GiB\nselftest:\n  schedule: 90m\n  time_limit: 1.5s\n"
      "  thresholds:\n    min_bandwidth:\n      any: 1.5GiB/s\n    max_latency: 2500ns\n");
  ASSERT_TRUE(r.profile) << r.diagnostics.format();
  EXPECT_EQ(r.profile->platform.gpu_vram, 24 * GiB);
  EXPECT_EQ(r.profile->selftest->schedule, std::chrono::minutes(90));
  EXPECT_EQ(r.profile->selftest->time_limit, std::chrono::milliseconds(1500));
  EXPECT_DOUBLE_EQ(r.profile->selftest->min_bandwidth.at("any").bytes_per_s, 1.5 * 1073741824.0);
  EXPECT_EQ(r.profile->selftest->max_latency, std::chrono::nanoseconds(2500));
}

TEST(ProfileLoader, ThresholdsFromExpectationAndBaseline) {
  const auto d = load("selftest:\n  schedule: 6h\n");
  ASSERT_TRUE(d.profile) << d.diagnostics.format();
  EXPECT_DOUBLE_EQ(d.profile->selftest->min_fraction_of_expected, 0.85);
  EXPECT_DOUBLE_EQ(d.profile->selftest->max_drop_from_baseline, 0.10);
  EXPECT_EQ(d.profile->selftest->baseline_runs, 5);
  const auto r = load(
      "selftest:\n  baseline_runs: 7\n  thresholds:\n    min_fraction_of_expected: 80%\n"
      "    max_drop_from_baseline: 0.2\n");
  ASSERT_TRUE(r.profile) << r.diagnostics.format();
  EXPECT_DOUBLE_EQ(r.profile->selftest->min_fraction_of_expected, 0.80);
  EXPECT_DOUBLE_EQ(r.profile->selftest->max_drop_from_baseline, 0.2);
  EXPECT_EQ(r.profile->selftest->baseline_runs, 7);
  const auto bad = load("selftest:\n  thresholds:\n    min_fraction_of_expected: 1.5\n");
  ASSERT_FALSE(bad.profile);
  EXPECT_NE(bad.diagnostics.format().find(
                "selftest.thresholds.min_fraction_of_expected: expected a fraction above 0 and below 1"),
            std::string::npos)
      << bad.diagnostics.format();
}

TEST(ProfileLoader, DiagnosticPositionsAreOneBased) {
  const auto r = load("platform:\n  iommu: passthru\n");
  ASSERT_FALSE(r.profile);
  const auto& d = r.diagnostics.list().front();
  EXPECT_EQ(d.line, 6);
  EXPECT_EQ(d.column, 10);
  EXPECT_EQ(d.key_path, "platform.iommu");
}

TEST(ProfileLoader, DuplicateProfileNamesInADirectory) {
  const p2pnode::test::TempDir scratch("dup");
  const fs::path dir = scratch.path();
  fs::create_directories(dir);
  fs::copy_file(kSrc / "tests/profiles/two-4090.yaml", dir / "a.yaml");
  fs::copy_file(kSrc / "tests/profiles/two-4090.yaml", dir / "b.yml");
  const auto r = load_profiles_dir(dir);
  ASSERT_EQ(r.profiles.size(), 1u);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].format(), (dir / "b.yml").string() +
                                        ": metadata.name: profile name 'two-4090' is already used by " +
                                        (dir / "a.yaml").string() + "\n");
  fs::remove_all(dir);
  EXPECT_FALSE(load_profiles_dir(dir).error.empty());
}

// driver.userspace.flags reach the root installer's argv: only the installer's options that name no
// file or path and leave DKMS to p2pnode pass, each refused where it is written.
TEST(ProfileLoader, InstallerFlagsHaveAGrammar) {
  const std::string inst =
      "driver:\n  version: 550.90.07\n  userspace:\n    installer:\n      path: /srv/x.run\n"
      "      sha256: " +
      std::string(64, 'a') + "\n    flags: ";
  const auto none = load(inst.substr(0, inst.rfind("    flags: ")));  // no flags at all
  ASSERT_TRUE(none.profile) << none.diagnostics.format();
  EXPECT_TRUE(none.profile->driver->installer_flags.empty());
  const auto ok = load(inst + "[--no-drm, --no-x-check, --no-systemd, --install-libglvnd]\n");
  ASSERT_TRUE(ok.profile) << ok.diagnostics.format();
  EXPECT_EQ(ok.profile->driver->installer_flags,
            (std::vector<std::string>{"--no-drm", "--no-x-check", "--no-systemd", "--install-libglvnd"}));
  for (const std::string bad : {"--log-file-name=/etc/shadow", "--dkms", "--tmpdir=/root", "--kernel-source-path", "-s",
                                "--no-drm --dkms", "--utility-prefix=/usr/local"}) {
    SCOPED_TRACE(bad);
    const auto r = load(inst + "[--no-drm, \"" + bad + "\"]\n");
    ASSERT_FALSE(r.profile);
    const auto& d = r.diagnostics.list().front();
    EXPECT_EQ(d.key_path, "driver.userspace.flags[1]");
    EXPECT_EQ(d.line, 11);
    EXPECT_EQ(d.column, 23);
    EXPECT_NE(d.message.find("found '" + bad + "'"), std::string::npos) << d.message;
    EXPECT_NE(d.message.find("--no-nouveau-check"), std::string::npos) << d.message;  // the list it expected
  }
}

// driver.options is read without MapReader's key check (option names are free-form NVreg_* words):
// a key written twice is refused there too, at the second one.
TEST(ProfileLoader, DuplicateModuleOptionsAreRefused) {
  const auto r = load(
      "driver:\n  version: 550.90.07\n  options:\n    NVreg_EnableResizableBar: 1\n"
      "    NVreg_OpenRmEnableUnsupportedGpus: 1\n    NVreg_EnableResizableBar: 0\n");
  ASSERT_FALSE(r.profile);
  const auto& d = r.diagnostics.list().front();
  EXPECT_EQ(d.key_path, "driver.options.NVreg_EnableResizableBar");
  EXPECT_EQ(d.line, 10);
  EXPECT_EQ(d.column, 5);
  EXPECT_NE(d.message.find("duplicate"), std::string::npos) << d.message;
}
