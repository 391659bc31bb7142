// gdrcopy's needs: the profile section, the pure figures (gdrcopy/needs.hpp) and the three checks over
// recorded machines (a 256 MiB BAR1, a Resizable-BAR box, drivers before and after the dma-buf
// backend's CUDA 13.3, the proprietary module, a loaded gdrdrv read by the probe).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "checks/check.hpp"
#include "gdrcopy/needs.hpp"
#include "probe/probe.hpp"
#include "profile/loader.hpp"
#include "unit/source_files.hpp"
#include "unit/temp_dir.hpp"

using namespace p2pnode;

namespace {
using p2pnode::test_files::kSrcDir;

std::string profile_text(const std::string& gdrcopy) {
  return "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata:\n  name: gdr\n"
         "driver:\n  version: 550.90.07\n  kernel_module:\n    source:\n      path: /srv/ogkm-550.90.07-p2p.tar.xz\n"
         "      sha256: 3c56fc1a3f0ee3de9a9e4bb20b3f5c33c224be266906c5e879d80eb3ec71086f\n"
         "gdrcopy:\n  version: \"2.6\"\n  source:\n    path: /srv/gdrcopy-2.6.tar.xz\n"
         "    sha256: 6557256e96d7e79069710ff0a33d33253524e8b73bf0a286e278e0f99a531618\n" +
         gdrcopy;
}

// The profile with `gdrcopy` appended to its section; a load that fails is reported and gives a
// profile without the section (checks then return nothing, which the tests' size assertions catch).
Profile load(const std::string& gdrcopy = "") {
  auto r = profile::load_profile_text(profile_text(gdrcopy), "gdr.yaml");
  EXPECT_TRUE(r.profile && r.profile->gdrcopy) << r.diagnostics.format();
  return r.profile.value_or(Profile{});
}

Inventory recorded(const std::string& fixture) {
  return probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/" + fixture));
}
}  // namespace

TEST(GdrcopyProfile, ReadsTheSectionWithItsDefaults) {
  const Profile d = load();
  ASSERT_TRUE(d.gdrcopy);
  EXPECT_EQ(d.gdrcopy->version, "2.6");
  EXPECT_EQ(d.gdrcopy->source.path, "/srv/gdrcopy-2.6.tar.xz");
  EXPECT_EQ(d.gdrcopy->device_owner, "root");
  EXPECT_EQ(d.gdrcopy->device_group, "root");
  EXPECT_EQ(d.gdrcopy->device_mode, 0660u);
  EXPECT_EQ(d.gdrcopy->pin, 64 * MiB);

  const Profile p = load("  device:\n    owner: \"0\"\n    group: video\n    mode: \"0666\"\n  pin: 512MiB\n");
  ASSERT_TRUE(p.gdrcopy);
  EXPECT_EQ(p.gdrcopy->device_owner, "0");
  EXPECT_EQ(p.gdrcopy->device_group, "video");
  EXPECT_EQ(p.gdrcopy->device_mode, 0666u);
  EXPECT_EQ(p.gdrcopy->pin, 512 * MiB);
}

TEST(GdrcopyProfile, BadValuesSayWhatWasExpected) {
  auto r = profile::load_profile_text(profile_text("  pin: 0B\n  device:\n    owner: 9root\n"), "gdr.yaml");
  ASSERT_FALSE(r.profile);
  const std::string text = r.diagnostics.format();
  EXPECT_NE(text.find("gdrcopy.pin: expected a size above 0 such as 64MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("gdrcopy.device.owner: expected a user name or numeric id, found '9root'"), std::string::npos)
      << text;
  r = profile::load_profile_text(profile_text("  sources: {}\n"), "gdr.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_NE(r.diagnostics.format().find("gdrcopy.sources"), std::string::npos) << r.diagnostics.format();
  // Unquoted, other YAML tools read the mode as a number (0660 as 432): refused with why.
  r = profile::load_profile_text(profile_text("  device:\n    mode: 0660\n"), "gdr.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_NE(r.diagnostics.format().find("gdrcopy.device.mode: expected the mode quoted, \"0660\""), std::string::npos)
      << r.diagnostics.format();
  // (uid_t)-1 means "leave unchanged" to chown: not an id.
  r = profile::load_profile_text(profile_text("  device:\n    owner: \"4294967295\"\n"), "gdr.yaml");
  EXPECT_FALSE(r.profile);
  for (const char* v : {"2.", "2..6", ".6"}) {
    r = profile::load_profile_text(
        profile_text("").replace(profile_text("").find("\"2.6\""), 5, std::string("\"") + v + "\""), "gdr.yaml");
    EXPECT_FALSE(r.profile) << v;
  }
}

TEST(GdrcopyNeeds, Bar1RoomIsWhatTheReserveLeavesInWholeGpuPages) {
  EXPECT_EQ(gdrcopy::pinnable(256 * MiB), 220 * MiB);
  EXPECT_EQ(gdrcopy::pinnable(32 * GiB), 32 * GiB - 36 * MiB);
  EXPECT_EQ(gdrcopy::pinnable(36 * MiB), 0u);
  EXPECT_EQ(gdrcopy::pinnable(16 * MiB), 0u);
  EXPECT_EQ(gdrcopy::pinnable(36 * MiB + 100 * KiB), 64 * KiB);
  EXPECT_EQ(gdrcopy::pin_footprint(1), 64 * KiB);
  EXPECT_EQ(gdrcopy::pin_footprint(64 * KiB), 64 * KiB);
  EXPECT_EQ(gdrcopy::pin_footprint(64 * KiB + 1), 128 * KiB);
}

TEST(GdrcopyNeeds, DmaBufNeedsCuda133WhichNoKnownBranchReports) {
  for (auto [version, cuda] : {std::pair<const char*, const char*>{"550.90.07", "12.4"},
                               {"565.57.01", "12.7"},
                               {"570.86.16", "12.8"},
                               {"580.159.04", "13.0"},
                               {"590.48.01", "13.1"}}) {
    const auto v = gdrcopy::dmabuf_support(version);
    EXPECT_EQ(v.support, gdrcopy::DmaBuf::unavailable) << version;
    EXPECT_EQ(v.cuda, cuda) << version;
  }
  EXPECT_EQ(gdrcopy::dmabuf_support("535.183.01").support, gdrcopy::DmaBuf::unavailable);
  EXPECT_EQ(gdrcopy::dmabuf_support("545.29.06").support, gdrcopy::DmaBuf::unavailable);
  const auto newer = gdrcopy::dmabuf_support("595.58.03");
  EXPECT_EQ(newer.support, gdrcopy::DmaBuf::unknown);
  EXPECT_NE(newer.why.find("cannot be told from its version"), std::string::npos) << newer.why;
  EXPECT_EQ(gdrcopy::dmabuf_support("").support, gdrcopy::DmaBuf::unknown);
  EXPECT_EQ(gdrcopy::dmabuf_support("x.1").support, gdrcopy::DmaBuf::unknown);
  EXPECT_EQ(gdrcopy::dmabuf_support("550x.1").support, gdrcopy::DmaBuf::unknown);
}

TEST(GdrcopyChecks, WithoutTheSectionNothingIsJudged) {
  Profile none;
  const Inventory inv = recorded("tinybox-6x4090-bios-default");
  EXPECT_TRUE(checks::check_gdrcopy_bar1(none, inv).empty());
  EXPECT_TRUE(checks::check_gdrcopy_flavour(none, inv).empty());
  EXPECT_TRUE(checks::check_gdrcopy_backend(none, inv).empty());
}

TEST(GdrcopyChecks, A256MiBBar1HoldsSmallPinsOnlyAndSaysHowMuch) {
  const Inventory inv = recorded("tinybox-6x4090-bios-default");
  auto fs = checks::check_gdrcopy_bar1(load("  pin: 512MiB\n"), inv);
  ASSERT_EQ(fs.size(), 6u);
  for (const auto& f : fs) {
    EXPECT_EQ(f.severity, Severity::error);
    EXPECT_EQ(f.summary,
              "BAR1 is 256 MiB: the driver keeps 36 MiB of it free, so at most 220 MiB can be pinned (less what "
              "CUDA and P2P map); gdrcopy.pin is 512 MiB, which does not fit");
    EXPECT_NE(f.remediation.find("lower gdrcopy.pin to at most 220 MiB"), std::string::npos) << f.remediation;
    EXPECT_EQ(f.observed["pinnable_bytes"], 220 * MiB);
  }
  fs = checks::check_gdrcopy_bar1(load(), inv);  // the default 64 MiB fits
  ASSERT_EQ(fs.size(), 6u);
  EXPECT_EQ(fs[0].severity, Severity::ok) << fs[0].summary;
  fs = checks::check_gdrcopy_bar1(load("  pin: 220MiB\n"), inv);  // exactly what is left
  ASSERT_EQ(fs.size(), 6u);
  EXPECT_EQ(fs[0].severity, Severity::ok) << fs[0].summary;
  fs = checks::check_gdrcopy_bar1(load("  pin: 230686721B\n"), inv);  // 220 MiB + 1 byte: one GPU page more
  ASSERT_EQ(fs.size(), 6u);
  EXPECT_EQ(fs[0].severity, Severity::error) << fs[0].summary;
  EXPECT_NE(fs[0].summary.find("gdrcopy.pin is 220.00 MiB (225344 KiB in 64 KiB pages)"), std::string::npos)
      << fs[0].summary;
}

TEST(GdrcopyChecks, ResizableBarHoldsLargePins) {
  auto fs = checks::check_gdrcopy_bar1(load("  pin: 16GiB\n"), recorded("tinybox-6x4090"));
  ASSERT_EQ(fs.size(), 6u);
  EXPECT_EQ(fs[0].severity, Severity::ok);
  EXPECT_EQ(fs[0].summary,
            "BAR1 is 32 GiB: the driver keeps 36 MiB of it free, so at most 32732 MiB can be pinned (less what "
            "CUDA and P2P map); gdrcopy.pin is 16 GiB");
}

TEST(GdrcopyChecks, TheOpenModuleIsWhatGdrdrvIsBuiltFor) {
  Inventory inv = recorded("tinybox-6x4090");  // the open 550.90.07 module loaded
  const Profile p = load();
  auto fs = checks::check_gdrcopy_flavour(p, inv);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::ok) << fs[0].summary;
  EXPECT_EQ(fs[0].summary,
            "the open NVIDIA module 550.90.07 is loaded: the one gdrdrv is built for (gdrdrv is not loaded: "
            "gdrcopy.backend)");

  // The same box with the proprietary module of that version loaded (its one difference).
  inv.nvidia.open_module = false;
  fs = checks::check_gdrcopy_flavour(p, inv);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::error);
  EXPECT_NE(fs[0].summary.find("the proprietary NVIDIA module 550.90.07 is loaded"), std::string::npos)
      << fs[0].summary;
  EXPECT_NE(fs[0].remediation.find("driver.reload.allow"), std::string::npos);

  inv.nvidia.open_module.reset();  // loaded, flavour unread: not called ok
  fs = checks::check_gdrcopy_flavour(p, inv);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::warning) << fs[0].summary;

  inv.nvidia.open_module = true;  // gdrdrv built for the proprietary flavour beside the open module
  inv.gdrdrv.loaded = true;
  inv.gdrdrv.version = "2.6";
  fs = checks::check_gdrcopy_flavour(p, inv);  // its params unread
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::warning) << fs[0].summary;
  inv.gdrdrv.open_flavour = false;
  fs = checks::check_gdrcopy_flavour(p, inv);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::error);
  EXPECT_NE(fs[0].remediation.find("NVIDIA_SRC_DIR=/usr/src/nvidia-p2p-550.90.07/kernel-open/nvidia"),
            std::string::npos)
      << fs[0].remediation;

  const Inventory none = recorded("epyc-4x5090");  // no NVIDIA module loaded
  fs = checks::check_gdrcopy_flavour(p, none);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::warning) << fs[0].summary;
}

TEST(GdrcopyChecks, WithoutGdrdrvTheDriverDecidesWhetherThereIsABackend) {
  const Profile p = load();
  // The lent H200 box: driver 580.159.04, CUDA 13.0: no dma-buf backend, so no backend at all.
  auto fs = checks::check_gdrcopy_backend(p, recorded("h200-4gpu"));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::error);
  EXPECT_NE(fs[0].summary.find("gdrdrv is not loaded, and driver 580.159.04 (CUDA 13.0) is older than the CUDA 13.3"),
            std::string::npos)
      << fs[0].summary;
  EXPECT_NE(fs[0].summary.find("gdrcopy has no backend"), std::string::npos);
  EXPECT_EQ(fs[0].observed["cuda"], "13.0");
  EXPECT_NE(fs[0].remediation.find("NVIDIA_IS_OPENSOURCE=y"), std::string::npos) << fs[0].remediation;
  // The AM5 box's 595 driver: a branch after 590, which may offer it: its version cannot tell.
  fs = checks::check_gdrcopy_backend(p, recorded("am5-2x5090"));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::warning) << fs[0].summary;
  EXPECT_EQ(fs[0].observed["dmabuf"], "unknown");
  // No driver loaded or installed: the profile's version is judged, and the summary says so.
  fs = checks::check_gdrcopy_backend(p, recorded("tinybox-6x4090-bios-default"));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_NE(fs[0].summary.find("gdrdrv is not loaded, and the profile's driver 550.90.07 (CUDA 12.4)"),
            std::string::npos)
      << fs[0].summary;
  EXPECT_EQ(fs[0].observed["dmabuf"], "unavailable");
}

TEST(GdrcopyChecks, ALoadedGdrdrvIsReadFromTheMachineAndItsNodeJudged) {
  // A recorded box plus what a loaded gdrdrv puts in /sys, /proc and /dev (a plain file stands in for
  // the device node here: the probe tells them apart).
  namespace fs = std::filesystem;
  const p2pnode::test::TempDir scratch("gdrdrv-probe");
  const fs::path root = scratch / "root";
  fs::copy(kSrcDir + "/tests/fixtures/tinybox-6x4090", root,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  auto write = [&](const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  };
  write("sys/module/gdrdrv/version", "2.6\n");
  write("proc/driver/gdrdrv/params",
        "Version: 2.6\nBuilt for NVIDIA driver flavor: opensource\nUse persistent mapping: yes\n");
  write("proc/devices", "Character devices:\n  1 mem\n195 nvidia\n508 gdrdrv\n\nBlock devices:\n  8 sd\n");
  write("dev/gdrdrv", "");
  write("etc/passwd", "root:x:0:0:root:/root:/bin/bash\n");
  write("etc/group", "root:x:0:\nvideo:x:44:\n");
  fs::permissions(root / "dev/gdrdrv", fs::perms(0660));
  const Inventory inv = probe::probe_inventory(sys::SysRoot(root));
  EXPECT_TRUE(inv.gdrdrv.loaded);
  EXPECT_EQ(inv.gdrdrv.version, "2.6");
  EXPECT_EQ(inv.gdrdrv.open_flavour, true);
  EXPECT_EQ(inv.gdrdrv.major, 508);
  EXPECT_TRUE(inv.gdrdrv.device_node);
  EXPECT_FALSE(inv.gdrdrv.device_is_char);
  EXPECT_EQ(inv.gdrdrv.device_mode, 0660u);
  // The node's owner and group named from the root's own /etc/passwd and /etc/group (the test runs
  // as root, so the file is 0:0).
  EXPECT_EQ(inv.gdrdrv.device_owner, "root");
  EXPECT_EQ(inv.gdrdrv.device_group, "root");
  const Profile p = load("  device:\n    group: video\n");
  auto f = checks::check_gdrcopy_backend(p, inv);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_NE(f[0].summary.find("/dev/gdrdrv is not a character device"), std::string::npos) << f[0].summary;
  EXPECT_NE(
      f[0].remediation.find("rm -f /dev/gdrdrv && mknod -m 0660 /dev/gdrdrv c 508 0 && chown root:video /dev/gdrdrv"),
      std::string::npos)
      << f[0].remediation;
  auto fl = checks::check_gdrcopy_flavour(p, inv);
  ASSERT_EQ(fl.size(), 1u);
  EXPECT_EQ(fl[0].summary, "the open NVIDIA module 550.90.07 is loaded, and gdrdrv 2.6 built for it");

  Inventory dev = inv;  // as on a node: a character device of gdrdrv's major, root:root 0660
  dev.gdrdrv.device_is_char = true;
  dev.gdrdrv.device_major = 508;
  f = checks::check_gdrcopy_backend(p, dev);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_EQ(f[0].summary, "gdrdrv 2.6 is loaded; /dev/gdrdrv is 0660 root:root, the profile asks 0660 root:video");
  dev.gdrdrv.device_group = "video";
  dev.gdrdrv.device_gid = 44;
  f = checks::check_gdrcopy_backend(p, dev);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::ok);
  EXPECT_EQ(f[0].summary, "gdrdrv 2.6 is loaded: the gdrdrv backend, /dev/gdrdrv 0660 root:video");
  // The profile may name the group by id: compared with the node's id, not its name.
  f = checks::check_gdrcopy_backend(load("  device:\n    group: \"44\"\n"), dev);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::ok) << f[0].summary;
  // A node left from an earlier load names an old major.
  dev.gdrdrv.device_major = 507;
  f = checks::check_gdrcopy_backend(p, dev);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_NE(f[0].summary.find("names major 507 and gdrdrv has 508"), std::string::npos) << f[0].summary;
  dev.gdrdrv.device_major = 508;
  dev.gdrdrv.version = "2.4";  // not the profile's release
  f = checks::check_gdrcopy_backend(p, dev);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_NE(f[0].summary.find("gdrdrv 2.4 is loaded, the profile asks gdrcopy 2.6"), std::string::npos) << f[0].summary;
  dev.gdrdrv.device_node = false;
  f = checks::check_gdrcopy_backend(p, dev);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find("/dev/gdrdrv is missing"), std::string::npos);
  EXPECT_EQ(f[0].remediation.find("rm -f"), std::string::npos) << f[0].remediation;
}
