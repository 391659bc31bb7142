// Probes over recorded fixtures, and over damaged copies of them: missing, empty, truncated and
// garbage files become problems (findings), never crashes; probing never writes.
#include "probe/probe.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "checks/check.hpp"
#include "core/units.hpp"
#include "profile/loader.hpp"
#include "unit/fixture_inventory.hpp"
#include "unit/temp_dir.hpp"

using namespace p2pnode;
namespace fs = std::filesystem;

namespace {
const fs::path kFixtures = fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures";

using p2pnode::test_files::probe_fixture;

// A private copy of a fixture that a test may damage.
class DamagedCopy : public ::testing::Test {
 protected:
  void copy(const std::string& name) {
    dir_ = tmp_ / name;
    fs::remove_all(dir_);
    fs::copy(kFixtures / name, dir_, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  void put(const std::string& rel, const std::string& text) {
    std::ofstream(dir_ / rel, std::ios::binary | std::ios::trunc) << text;
  }
  p2pnode::test::TempDir tmp_{"probe"};
  fs::path dir_;
};

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const auto rel = fs::relative(e.path(), dir).string();
    if (e.is_symlink()) {
      out[rel] = "-> " + fs::read_symlink(e.path()).string();
    } else if (e.is_regular_file()) {
      std::ifstream in(e.path(), std::ios::binary);
      out[rel] = std::string(std::istreambuf_iterator<char>(in), {});
    } else {
      out[rel] = "dir";
    }
  }
  return out;
}
}  // namespace

TEST(Probe, RecordedH100) {
  const auto inv = probe_fixture("h100-1gpu");
  const auto gpus = inv.gpus();
  ASSERT_EQ(gpus.size(), 1u);
  const PciDevice& g = *gpus[0];
  EXPECT_EQ(g.bdf, "0000:00:06.0");
  EXPECT_EQ(g.vendor, 0x10de);
  EXPECT_EQ(g.device, 0x2330);
  EXPECT_EQ(g.config_size, 4096u);
  EXPECT_TRUE(g.rebar_hidden);
  EXPECT_TRUE(g.rebar.empty());
  EXPECT_EQ(g.numa_node, -1);
  EXPECT_EQ(g.link.current_gts, 32.0);
  EXPECT_EQ(g.link.current_width, 16);
  ASSERT_NE(g.vram_aperture(), nullptr);
  EXPECT_EQ(g.vram_aperture()->size(), 128 * GiB);
  EXPECT_TRUE(g.problems.empty()) << g.problems.front();
  EXPECT_TRUE(g.upstream.empty());
  EXPECT_EQ(g.root_complex, "pci0000:00");
  EXPECT_EQ(inv.iommu.mode, IommuMode::off);
  EXPECT_EQ(inv.nvidia.loaded_version, "580.159.04");
  EXPECT_EQ(inv.nvidia.open_module, true);
  EXPECT_TRUE(inv.problems.empty());
}

TEST(Probe, TinyboxAfterTheBiosFix) {
  const auto inv = probe_fixture("tinybox-6x4090");
  ASSERT_EQ(inv.gpus().size(), 6u);
  const PciDevice* g = inv.find("0000:01:00.0");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->kind, DeviceKind::gpu);
  EXPECT_EQ(g->upstream, (std::vector<std::string>{"0000:00:01.1"}));
  EXPECT_EQ(g->sysfs_path, "/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0");
  EXPECT_EQ(g->vram_aperture()->index, 1);
  EXPECT_EQ(g->vram_aperture()->size(), 32 * GiB);
  EXPECT_EQ(g->rebar.size(), 3u);
  EXPECT_EQ(g->resize_attrs.count(1), 1u);
  EXPECT_EQ(inv.find("0000:01:00.1")->kind, DeviceKind::gpu_function);
  const PciDevice* rp = inv.find("0000:00:01.1");
  ASSERT_NE(rp, nullptr);
  EXPECT_EQ(rp->kind, DeviceKind::bridge);
  ASSERT_TRUE(rp->acs);
  EXPECT_FALSE(rp->acs->redirects());
  EXPECT_EQ(inv.iommu.mode, IommuMode::off);
  EXPECT_EQ(inv.nvidia.builder, "tiny@tiny14");
  EXPECT_EQ(inv.hostname, "tiny14");
  // Devices come sorted by address.
  EXPECT_TRUE(std::is_sorted(inv.devices.begin(), inv.devices.end(),
                             [](const PciDevice& a, const PciDevice& b) { return a.bdf < b.bdf; }));
}

TEST(Probe, IommuOfTheFixtures) {
  EXPECT_EQ(probe_fixture("tinybox-6x4090-bios-default").iommu.mode, IommuMode::translating);
  EXPECT_EQ(probe_fixture("rebar-not-resized").iommu.mode, IommuMode::passthrough);
  const auto nvme = probe_fixture("epyc-8x4090-4nvme");
  EXPECT_EQ(nvme.iommu.mode, IommuMode::off);
  EXPECT_TRUE(nvme.iommu.noiommu_groups);
  EXPECT_EQ(nvme.nvme_controllers().size(), 4u);
  EXPECT_EQ(nvme.gpus().size(), 8u);
}

TEST(Probe, MissingRootIsAProblemNotACrash) {
  const auto inv = probe::probe_inventory(sys::SysRoot("/nonexistent/p2pnode-root"));
  EXPECT_TRUE(inv.devices.empty());
  ASSERT_FALSE(inv.problems.empty());
  EXPECT_NE(inv.problems.front().find("/sys/bus/pci/devices does not exist"), std::string::npos);
}

TEST_F(DamagedCopy, DamagedAttributesBecomeProblems) {
  copy("tinybox-6x4090");
  const std::string gpu = "sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/";
  put(gpu + "vendor", "garbage\n");
  put(gpu + "resource", "");
  put(gpu + "current_link_speed", "fast\n");
  fs::remove(dir_ / (gpu + "current_link_width"));
  fs::resize_file(dir_ / (gpu + "config"), 40);  // truncated
  const auto inv = probe::probe_inventory(sys::SysRoot(dir_));
  const PciDevice* g = inv.find("0000:01:00.0");
  ASSERT_NE(g, nullptr);
  std::string all;
  for (const auto& p : g->problems) { all += p + "\n"; }
  EXPECT_NE(all.find("vendor: 'garbage' is not a hex number"), std::string::npos) << all;
  EXPECT_NE(all.find("resource: resource is empty"), std::string::npos) << all;
  EXPECT_NE(all.find("'fast' is not a link speed"), std::string::npos) << all;
  EXPECT_NE(all.find("config: only 40 bytes (truncated)"), std::string::npos) << all;
  EXPECT_FALSE(g->link.current_width);  // optional (virtual functions lack it): pcie.link says so
  // The checks still run, and say so, although the garbage vendor hides that it is a GPU.
  EXPECT_EQ(g->kind, DeviceKind::other);
  auto prof = profile::load_profile_file(fs::path(P2PNODE_SOURCE_DIR) / "profiles/tinybox-6x4090.yaml");
  ASSERT_TRUE(prof.profile);
  const auto fs = checks::run_all_checks(*prof.profile, inv);
  const bool reported = std::any_of(fs.begin(), fs.end(), [](const Finding& f) {
    return f.check == "sysfs.attributes" && f.subject == "0000:01:00.0" && f.severity != Severity::ok;
  });
  EXPECT_TRUE(reported);
}

TEST_F(DamagedCopy, BinaryGarbageEverywhereNeverCrashes) {
  copy("h100-1gpu");
  const std::string gpu = "sys/devices/pci0000:00/0000:00:06.0/";
  const std::string junk("\x00\xff\x13\x37\n\x00garbage\xfe", 14);
  for (const char* f : {"vendor", "device", "class", "resource", "numa_node", "max_link_speed", "max_link_width",
                        "power_state", "subsystem_vendor", "revision"}) {
    put(gpu + f, junk);
  }
  put("proc/cmdline", junk);
  put("proc/driver/nvidia/version", junk);
  put("sys/module/nvidia/version", junk);
  const auto inv = probe::probe_inventory(sys::SysRoot(dir_));
  const PciDevice* g = inv.find("0000:00:06.0");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->problems.empty());
  (void)checks::run_all_checks(Profile{}, inv);
}

TEST_F(DamagedCopy, ProbingAndCheckingNeverWrite) {
  copy("epyc-8x4090-4nvme");
  const auto before = snapshot(dir_);
  const sys::SysRoot root(dir_);
  const auto inv = probe::probe_inventory(root);
  auto prof = profile::load_profile_file(fs::path(P2PNODE_SOURCE_DIR) / "profiles/epyc-8x4090.yaml");
  ASSERT_TRUE(prof.profile);
  (void)checks::run_all_checks(*prof.profile, inv);
  EXPECT_EQ(root.write_count(), 0u);
  EXPECT_EQ(snapshot(dir_), before);
}
