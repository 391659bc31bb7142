// gdrdrv through the NVIDIA module's DKMS life cycle: its DKMS package and dkms.conf, its identity
// tied to the NVIDIA tree's, the boot guard counting it, gdrcopy.kernels, and gdrcopy.device
// loading it and making /dev/gdrdrv through the seams (a root in a temporary directory, commands
// scripted to do what modprobe, mknod, chmod and chown do).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "actions/action.hpp"
#include "checks/check.hpp"
#include "dkms/conf.hpp"
#include "gdrcopy/device.hpp"
#include "lifecycle/boot_guard.hpp"
#include "lifecycle/gdrdrv.hpp"
#include "lifecycle/module_install.hpp"
#include "probe/probe.hpp"
#include "profile/loader.hpp"
#include "unit/temp_dir.hpp"

using namespace p2pnode;
namespace fs = std::filesystem;

namespace {
const std::string kNvidiaSha = "3c56fc1a3f0ee3de9a9e4bb20b3f5c33c224be266906c5e879d80eb3ec71086f";

Profile gdrdrv_profile(const std::string& nvidia_sha = kNvidiaSha, const std::string& patches = "",
                       const std::string& device = "") {
  const std::string text =
      "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata:\n  name: gdr\n"
      "driver:\n  version: 550.90.07\n  kernel_module:\n    source:\n      path: /srv/ogkm-550.90.07-p2p.tar.xz\n"
      "      sha256: " +
      nvidia_sha + "\n" + patches +
      "gdrcopy:\n  version: \"2.6\"\n  source:\n    path: /srv/gdrcopy-2.6.tar.xz\n"
      "    sha256: 6557256e96d7e79069710ff0a33d33253524e8b73bf0a286e278e0f99a531618\n" +
      device;
  auto r = profile::load_profile_text(text, "gdr.yaml");
  EXPECT_TRUE(r.profile && r.profile->gdrcopy) << r.diagnostics.format();
  return r.profile.value_or(Profile{});
}

DkmsOnKernel on_kernel(const std::string& pkg, const std::string& ver) {
  DkmsOnKernel d;
  d.package = pkg;
  d.version = ver;
  d.built = d.installed = true;
  return d;
}
}  // namespace

TEST(Gdrdrv, ItsOwnDkmsPackageBuiltAgainstTheStagedNvidiaTree) {
  const Profile p = gdrdrv_profile();
  const auto spec = lifecycle::gdrdrv_spec(p);
  ASSERT_TRUE(spec && spec->kernel_module);
  EXPECT_EQ(spec->version, "2.6");
  EXPECT_EQ(spec->kernel_module->name, "gdrdrv");
  EXPECT_EQ(spec->kernel_module->artifact.path, "/srv/gdrcopy-2.6.tar.xz");
  EXPECT_EQ(spec->kernel_module->nvidia_src_dir, "/usr/src/nvidia-p2p-550.90.07/kernel-open/nvidia");
  const auto t = lifecycle::module_target(*spec);
  EXPECT_EQ(t.src_dir, "/usr/src/gdrdrv-2.6");
  EXPECT_EQ(t.stamp, "/var/lib/p2pnode/dkms/gdrdrv-2.6.json");

  const std::string conf = dkms::render(dkms::gdrdrv_conf(t.name, t.version, spec->kernel_module->nvidia_src_dir));
  EXPECT_NE(conf.find("from the profile's gdrcopy;"), std::string::npos) << conf;
  // Its Makefile uses $(PWD): it runs from src/gdrdrv, with the open flavour and the staged tree.
  EXPECT_NE(
      conf.find("MAKE[0]='cd src/gdrdrv && '\\''make'\\'' KVER=${kernelver} "
                "NVIDIA_SRC_DIR='\\''/usr/src/nvidia-p2p-550.90.07/kernel-open/nvidia'\\'' NVIDIA_IS_OPENSOURCE=y'"),
      std::string::npos)
      << conf;
  EXPECT_NE(conf.find("BUILT_MODULE_NAME[0]='gdrdrv'\nBUILT_MODULE_LOCATION[0]='src/gdrdrv/'"), std::string::npos)
      << conf;
  EXPECT_EQ(conf.find("BUILT_MODULE_NAME[1]"), std::string::npos) << "nv-p2p-dummy.ko is not installed";
  EXPECT_EQ(conf.find("AUTOINSTALL"), std::string::npos) << "p2pnode's kernel hook builds it, never DKMS's";

  Profile none = p;
  none.gdrcopy.reset();
  EXPECT_FALSE(lifecycle::gdrdrv_spec(none));
  Profile no_module = p;
  no_module.driver->kernel_module.reset();
  EXPECT_FALSE(lifecycle::gdrdrv_spec(no_module));
}

TEST(Gdrdrv, AChangedNvidiaTreeIsAChangedGdrdrv) {
  const auto id = [](const Profile& p) { return lifecycle::module_target(*lifecycle::gdrdrv_spec(p)).identity; };
  const Profile p = gdrdrv_profile();
  EXPECT_EQ(id(p), id(gdrdrv_profile())) << "same profile, same identity: nothing rebuilt";
  EXPECT_NE(id(p), id(gdrdrv_profile(std::string(64, 'a')))) << "another NVIDIA source";
  EXPECT_NE(id(p), id(gdrdrv_profile(kNvidiaSha, "    patches:\n      - builtin: pci-resize-resource-exclude-bars\n")))
      << "the NVIDIA tree with a patch added";
  // gdrcopy's own source is part of it too, as for any module.
  Profile other = p;
  other.gdrcopy->source.sha256 = std::string(64, 'b');
  EXPECT_NE(id(p), id(other));
}

TEST(Gdrdrv, AKernelWithoutGdrdrvIsAKernelWithoutTheModule) {
  const Profile p = gdrdrv_profile();
  Inventory inv;
  InstalledKernel newest, older;
  newest.release = "6.1.0-57-amd64";
  older.release = "6.1.0-56-amd64";
  newest.dkms = {on_kernel("nvidia-p2p", "550.90.07")};  // gdrdrv's build failed there
  older.dkms = {on_kernel("nvidia-p2p", "550.90.07"), on_kernel("gdrdrv", "2.6")};
  inv.kernels.kernels = {newest, older};
  inv.kernels.next_boot = "6.1.0-57-amd64";
  const auto in = lifecycle::boot_guard_inputs(p, inv);
  ASSERT_EQ(in.kernels.size(), 2u);
  EXPECT_FALSE(in.kernels[0].has_module);
  EXPECT_EQ(in.kernels[0].missing, (std::vector<std::string>{"gdrdrv/2.6"}));
  EXPECT_TRUE(in.kernels[1].has_module);
  const auto d = lifecycle::decide_boot_guard(in);
  EXPECT_EQ(d.what, lifecycle::BootGuardDecision::What::hold);
  EXPECT_EQ(d.kernel, "6.1.0-56-amd64");
  EXPECT_NE(d.reason.find("6.1.0-57-amd64 has no module (gdrdrv/2.6)"), std::string::npos) << d.reason;

  // Without a gdrcopy section gdrdrv does not count.
  Profile plain = p;
  plain.gdrcopy.reset();
  EXPECT_TRUE(lifecycle::boot_guard_inputs(plain, inv).kernels[0].has_module);

  // gdrcopy.kernels: ok where it is installed, an error naming the kernel where not.
  const auto fs = checks::check_gdrcopy_kernels(p, inv);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].subject, "6.1.0-57-amd64");
  EXPECT_EQ(fs[0].severity, Severity::error);
  EXPECT_NE(fs[0].summary.find("gdrdrv/2.6 is not installed for 6.1.0-57-amd64"), std::string::npos) << fs[0].summary;
  EXPECT_EQ(fs[1].severity, Severity::ok);
  // A build that failed names its make.log.
  FailedBuild fb;
  fb.package = "gdrdrv";
  fb.version = "2.6";
  fb.make_log = "/var/lib/p2pnode/dkms/failed/gdrdrv/2.6/6.1.0-57-amd64/make.log";
  fb.first_error = "gdrdrv.c:161: error: assignment of read-only member 'vm_flags'";
  inv.kernels.kernels[0].failed = {fb};
  const auto f2 = checks::check_gdrcopy_kernels(p, inv);
  ASSERT_EQ(f2.size(), 2u);
  EXPECT_NE(f2[0].summary.find("its DKMS build failed: gdrdrv.c:161"), std::string::npos) << f2[0].summary;
  EXPECT_NE(f2[0].remediation.find(fb.make_log), std::string::npos) << f2[0].remediation;
}

TEST(GdrdrvDevice, TheWorkBetweenTheProbedNodeAndTheProfile) {
  const Profile p = gdrdrv_profile("3c56fc1a3f0ee3de9a9e4bb20b3f5c33c224be266906c5e879d80eb3ec71086f", "",
                                   "  device:\n    owner: root\n    group: \"44\"\n    mode: \"0666\"\n");
  GdrdrvState g;
  auto w = gdrcopy::device_work(*p.gdrcopy, g);
  EXPECT_TRUE(w.load);
  EXPECT_FALSE(w.make_node) << "the major is known only once it is loaded";
  g.loaded = true;
  g.major = 508;
  w = gdrcopy::device_work(*p.gdrcopy, g);
  EXPECT_TRUE(w.make_node && w.set_owner && !w.remove_node && !w.load);
  g.device_node = g.device_is_char = true;
  g.device_major = 507;  // left from an earlier load
  g.device_mode = 0666;
  w = gdrcopy::device_work(*p.gdrcopy, g);
  EXPECT_TRUE(w.remove_node && w.make_node);
  ASSERT_FALSE(w.why.empty());
  EXPECT_NE(w.why[0].find("names major 507, gdrdrv has 508"), std::string::npos) << w.why[0];
  g.device_major = 508;
  g.device_owner = "root";
  g.device_group = "video";
  g.device_gid = 44;
  EXPECT_TRUE(gdrcopy::device_work(*p.gdrcopy, g).nothing()) << "group 44 given by number, compared by id";
  g.device_mode = 0600;
  w = gdrcopy::device_work(*p.gdrcopy, g);
  EXPECT_TRUE(w.set_mode && !w.set_owner && !w.make_node);
  g.device_mode = 0666;
  g.device_gid = 0;
  g.device_group = "root";
  w = gdrcopy::device_work(*p.gdrcopy, g);
  EXPECT_TRUE(w.set_owner && !w.set_mode);
}

namespace {
// A root where gdrdrv is installed for the running kernel, with modprobe, mknod, chmod and chown
// scripted to do to the root what the real ones do to a machine.
struct DeviceBox {
  p2pnode::test::TempDir tmp{"gdrdrv"};
  fs::path dir = tmp.path();
  sys::ScriptedRunner runner;
  DeviceBox() {
    for (const char* d : {"proc/sys/kernel", "sys/module", "dev", "etc", "lib/modules/6.1.0-56-amd64/updates/dkms"}) {
      fs::create_directories(dir / d);
    }
    write("proc/sys/kernel/osrelease", "6.1.0-56-amd64\n");
    write("proc/devices", "Character devices:\n  1 mem\n195 nvidia\n");
    write("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    write("etc/group", "root:x:0:\nvideo:x:44:\n");
    write("lib/modules/6.1.0-56-amd64/updates/dkms/gdrdrv.ko", "");
    runner.on({"modprobe", "gdrdrv"}, [this](const sys::Command&) {
      fs::create_directories(dir / "sys/module/gdrdrv");
      write("sys/module/gdrdrv/version", "2.6\n");
      write("proc/devices", "Character devices:\n  1 mem\n195 nvidia\n508 gdrdrv\n");
      return sys::exited_with(0);
    });
    runner.on({"mknod"}, [](const sys::Command& c) {  // mknod -m MODE PATH c MAJOR MINOR
      const int rc = ::mknod(
          c.argv.at(3).c_str(), S_IFCHR | static_cast<mode_t>(std::stoul(c.argv.at(2), nullptr, 8)),
          makedev(static_cast<unsigned>(std::stoul(c.argv.at(5))), static_cast<unsigned>(std::stoul(c.argv.at(6)))));
      if (rc == 0) {
        ::chmod(c.argv.at(3).c_str(), static_cast<mode_t>(std::stoul(c.argv.at(2), nullptr, 8)));  // past the umask
      }
      return sys::exited_with(rc == 0 ? 0 : 1, "", rc == 0 ? "" : "mknod: Operation not permitted");
    });
    runner.on({"chmod"}, [](const sys::Command& c) {
      return sys::exited_with(
          ::chmod(c.argv.at(2).c_str(), static_cast<mode_t>(std::stoul(c.argv.at(1), nullptr, 8))) ? 1 : 0);
    });
    runner.on({"chown"}, [](const sys::Command& c) {  // chown root:video PATH (this root's ids)
      const bool video = c.argv.at(1).ends_with(":video") || c.argv.at(1).ends_with(":44");
      return sys::exited_with(::chown(c.argv.at(2).c_str(), 0, video ? 44 : 0) ? 1 : 0);
    });
  }
  void write(const std::string& rel, const std::string& text) { std::ofstream(dir / rel, std::ios::binary) << text; }
  std::vector<StepResult> apply(const Profile& p) {
    sys::SysRoot root(dir);
    actions::ApplyContext ctx{root, runner, p};
    ctx.only = {"gdrcopy.device"};
    return actions::apply_all(ctx);
  }
};
}  // namespace

TEST(GdrdrvDevice, LoadedAfterNvidiaAndItsNodeMadeAsTheProfileAsks) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "making a character device node needs root (mknod); run the unit tests as root";
  }
  DeviceBox b;
  const Profile p =
      gdrdrv_profile(kNvidiaSha, "", "  device:\n    owner: root\n    group: video\n    mode: \"0660\"\n");
  auto r = b.apply(p);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].action, "gdrcopy.device");
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  EXPECT_EQ(b.runner.count("modprobe"), 1u);
  EXPECT_EQ(b.runner.count("mknod"), 1u);
  struct stat st {};
  ASSERT_EQ(::stat((b.dir / "dev/gdrdrv").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(major(st.st_rdev), 508u);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_gid, 44u);
  EXPECT_NE(r[0].message.find("/dev/gdrdrv c 508 0, 0660 root:video"), std::string::npos) << r[0].message;

  // A second apply does nothing.
  EXPECT_TRUE(b.apply(p).empty());
  EXPECT_EQ(b.runner.count("modprobe"), 1u);

  // gdrdrv reloaded with another major (the next boot): the old node is replaced.
  b.write("proc/devices", "Character devices:\n  1 mem\n195 nvidia\n507 gdrdrv\n");
  r = b.apply(p);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  ASSERT_EQ(::stat((b.dir / "dev/gdrdrv").c_str(), &st), 0);
  EXPECT_EQ(major(st.st_rdev), 507u);
}

TEST(GdrdrvDevice, NotInstalledForTheRunningKernelIsAFailureOrAReboot) {
  DeviceBox b;
  fs::remove(b.dir / "lib/modules/6.1.0-56-amd64/updates/dkms/gdrdrv.ko");
  const auto r = b.apply(gdrdrv_profile());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::failed);
  EXPECT_NE(r[0].message.find("gdrdrv is not installed for the running kernel 6.1.0-56-amd64"), std::string::npos)
      << r[0].message;
  EXPECT_EQ(b.runner.count("modprobe"), 0u);
  // Installed for a newer kernel only (built there, this one has no headers): after a reboot.
  fs::create_directories(b.dir / "lib/modules/6.1.0-57-amd64/build");
  fs::create_directories(b.dir / "lib/modules/6.1.0-57-amd64/updates/dkms");
  b.write("lib/modules/6.1.0-57-amd64/updates/dkms/gdrdrv.ko", "");
  const auto r2 = b.apply(gdrdrv_profile());
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0].outcome, StepOutcome::reboot_required) << r2[0].message;
  EXPECT_NE(r2[0].message.find("installed for [\"6.1.0-57-amd64\"] but not for the running kernel 6.1.0-56-amd64"),
            std::string::npos)
      << r2[0].message;
  EXPECT_EQ(b.runner.count("modprobe"), 0u);
}

TEST(GdrdrvModule, RefusedUntilTheNvidiaTreeIsPlaced) {
  DeviceBox b;
  fs::create_directories(b.dir / "lib/modules/6.1.0-56-amd64/build");
  const Profile p = gdrdrv_profile();
  sys::SysRoot root(b.dir);
  const Inventory inv = probe::probe_inventory(root);
  const auto plan = actions::plan_all(p, inv, root);
  const auto it =
      std::find_if(plan.steps.begin(), plan.steps.end(), [](const Step& s) { return s.action == "gdrcopy.module"; });
  ASSERT_NE(it, plan.steps.end());
  EXPECT_EQ(it->subject, "gdrdrv/2.6");
  EXPECT_NE(
      it->description.find("against /usr/src/nvidia-p2p-550.90.07/kernel-open/nvidia (once driver.module has placed"),
      std::string::npos)
      << it->description;
  actions::ApplyContext ctx{root, b.runner, p};
  ctx.only = {"gdrcopy.module"};
  const auto r = actions::apply_all(ctx);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::refused);
  EXPECT_NE(r[0].message.find("/usr/src/nvidia-p2p-550.90.07/kernel-open/nvidia/nv-p2p.h, which is not there"),
            std::string::npos)
      << r[0].message;
  EXPECT_TRUE(b.runner.calls().empty()) << "nothing run before the tree is there";
}

TEST(Gdrdrv, ItsVersionFromGdrdrvH) {
  EXPECT_EQ(dkms::gdrdrv_header_version(
                "#define GDRDRV_MAJOR_VERSION_SHIFT    16\n\n#define GDRDRV_MAJOR_VERSION    2\n"
                "#define GDRDRV_MINOR_VERSION    6\n#define GDRDRV_VERSION ((GDRDRV_MAJOR_VERSION << 16))\n"),
            "2.6");
  EXPECT_FALSE(dkms::gdrdrv_header_version("#define GDRDRV_MAJOR_VERSION 2\n"));
  EXPECT_FALSE(dkms::gdrdrv_header_version("#define GDRDRV_MAJOR_VERSION X\n#define GDRDRV_MINOR_VERSION 6\n"));
}
