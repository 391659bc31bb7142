// The driver actions against a temp-dir root and a ScriptedRunner that plays DKMS and the installer.
#include <gtest/gtest.h>
#include <lzma.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "actions/driver_install.hpp"
#include "driver_fixture.hpp"
#include "lifecycle/artifact.hpp"
#include "lifecycle/module_install.hpp"
#include "nvidia/breakage.hpp"

namespace p2pnode::actions {
namespace {
namespace fs = std::filesystem;

TEST(DriverModule, InstallsThenDoesNothing) {
  ModuleBench b;
  auto& [box, root, runner, dkms] = b;
  const Profile p = module_profile(box);
  Inventory inv;
  inv.kernel.release = kKernel;
  auto action = make_driver_module();
  ASSERT_EQ(action->plan(p, inv, root).size(), 1u);

  std::vector<std::string> log;
  ApplyContext ctx{root, runner, p};
  ctx.log = [&](std::string_view, std::string_view, std::string_view l) { log.emplace_back(l); };
  auto r = action->apply(ctx, inv);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  EXPECT_EQ(dkms.builds, 1);
  // The generated tree: dkms.conf with the quoted MAKE and the patch in patches/.
  const auto conf = root.read_text("/usr/src/p2ptest-1.5/dkms.conf");
  ASSERT_TRUE(conf);
  EXPECT_NE(conf->find("MAKE[0]=''\\''make'\\'' "), std::string::npos) << *conf;
  EXPECT_NE(conf->find("PATCH[0]='01-0001-mark.patch'"), std::string::npos);
  EXPECT_TRUE(root.exists("/usr/src/p2ptest-1.5/patches/01-0001-mark.patch"));
  EXPECT_TRUE(root.exists("/usr/src/p2ptest-1.5/p2ptest.c"));
  // Progress lines name the step and the elapsed time (the scripted runner streams no lines of its own).
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return l.rfind("[dkms build 6.1.0-56-amd64] exit 0 after ", 0) == 0;
  }));
  // The argv DKMS got.
  bool saw_install = false;
  for (const auto& c : runner.calls()) {
    if (c.size() > 1 && c[1] == "install") {
      saw_install =
          c == std::vector<std::string>{"dkms", "install", "-m", "p2ptest", "-v", "1.5", "-k", kKernel, "--force"};
    }
  }
  EXPECT_TRUE(saw_install);

  // Second time: nothing planned, and apply (if called anyway) builds nothing.
  EXPECT_TRUE(action->plan(p, inv, root).empty());
  const auto calls = runner.calls().size();
  r = action->apply(ctx, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::unchanged) << r[0].message;
  EXPECT_EQ(dkms.builds, 1);
  for (std::size_t i = calls; i < runner.calls().size(); ++i) { EXPECT_EQ(runner.calls()[i][1], "status"); }
}

// The .run installer's nvidia.ko in updates/dkms (no DKMS record) would load instead of what DKMS
// builds: apply moves it to /var/lib/p2pnode/shadowed/<kernel>/ before the build, never deletes it,
// and says so; a copy in kernel/drivers/video that modprobe does not resolve stays where it is.
TEST(DriverModule, ModulesThatShadowTheBuildAreMovedAsideWithABackup) {
  ModuleBench b;
  auto& [box, root, runner, dkms] = b;
  const Profile p = module_profile(box);
  const std::string base = std::string("/lib/modules/") + kKernel;
  box.write(base.substr(1) + "/updates/dkms/nvidia.ko.xz", "the .run installer's");
  box.write(base.substr(1) + "/kernel/drivers/video/nvidia.ko", "outranked");
  Inventory inv;
  inv.kernel.release = kKernel;
  InstalledKernel k;
  k.release = kKernel;
  k.headers = true;
  k.foreign_nvidia = {base + "/updates/dkms/nvidia.ko.xz", base + "/kernel/drivers/video/nvidia.ko"};
  k.modprobe_nvidia = base + "/updates/dkms/nvidia.ko.xz";
  inv.kernels.kernels.push_back(k);
  std::vector<std::string> log;
  ApplyContext ctx{root, runner, p};
  ctx.log = [&](std::string_view, std::string_view, std::string_view l) { log.emplace_back(l); };
  const auto r = make_driver_module()->apply(ctx, inv);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  const std::string backup = std::string("/var/lib/p2pnode/shadowed/") + kKernel + "/updates/dkms/nvidia.ko.xz";
  EXPECT_FALSE(root.exists(base + "/updates/dkms/nvidia.ko.xz"));
  EXPECT_EQ(root.read_text(backup).value_or(""), "the .run installer's");
  EXPECT_TRUE(root.exists(base + "/kernel/drivers/video/nvidia.ko"));
  EXPECT_EQ(r[0].after["moved_aside"], (nlohmann::json{base + "/updates/dkms/nvidia.ko.xz -> " + backup}));
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return l.rfind("moved aside a module DKMS did not install: ", 0) == 0;
  }));
}

TEST(DriverModule, CorruptSha256RefusesAndWritesNothing) {
  ModuleBench b;
  auto& [box, root, runner, dkms] = b;
  const Profile p = module_profile(box, std::string(64, 'a'));
  Inventory inv;
  inv.kernel.release = kKernel;
  ApplyContext ctx{root, runner, p};
  auto r = make_driver_module()->apply(ctx, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::refused);
  EXPECT_NE(r[0].message.find("sha256 mismatch"), std::string::npos) << r[0].message;
  // The good source was copied into p2pnode's own artifact directory before the patch was refused
  // (its three writes: the folder made, the copy, the copy renamed into place); the patch was refused
  // before any copy, and nothing outside that was touched.
  EXPECT_EQ(r[0].writes, 3u);
  EXPECT_TRUE(root.is_dir("/var/lib/p2pnode/artifacts/local"));
  EXPECT_EQ(root.list_dir("/var/lib/p2pnode/artifacts/local").size(), 1u) << "the source's copy only";
  EXPECT_FALSE(root.exists("/usr/src/p2ptest-1.5"));
  EXPECT_EQ(dkms.builds, 0);
}

TEST(DriverModule, FailedRebuildKeepsTheInstallAndReportsTheCompilerError) {
  ModuleBench b;
  auto& [box, root, runner, dkms] = b;
  Inventory inv;
  inv.kernel.release = kKernel;
  const Profile p = module_profile(box);
  ApplyContext ctx{root, runner, p};
  ASSERT_EQ(make_driver_module()->apply(ctx, inv)[0].outcome, StepOutcome::changed);
  const auto conf_before = *root.read_text("/usr/src/p2ptest-1.5/dkms.conf");

  // The source changes (a second patch); the build of the new source fails.
  box.write("srv/0002-more.patch", "--- /dev/null\n+++ b/more.c\n@@ -0,0 +1 @@\n+int more;\n");
  Profile p2 = p;
  Artifact more;
  more.path = "/srv/0002-more.patch";
  more.sha256 = *lifecycle::sha256_file(root, "/srv/0002-more.patch");
  p2.driver->kernel_module->patches.push_back(more);
  dkms.build_exit = 10;
  ApplyContext ctx2{root, runner, p2};
  auto r = make_driver_module()->apply(ctx2, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::failed);
  EXPECT_NE(r[0].message.find("exit 10"), std::string::npos) << r[0].message;
  EXPECT_NE(r[0].message.find("the module build failed"), std::string::npos) << r[0].message;
  EXPECT_NE(r[0].message.find("error: expected ';'"), std::string::npos) << r[0].message;
  EXPECT_EQ(r[0].after["dkms_exit_code"], 10);
  // The trial ran in a scratch tree; the installed source and module are untouched.
  bool trial = false;
  for (const auto& c : runner.calls()) { trial |= std::find(c.begin(), c.end(), "--dkmstree") != c.end(); }
  EXPECT_TRUE(trial);
  EXPECT_EQ(*root.read_text("/usr/src/p2ptest-1.5/dkms.conf"), conf_before);
  EXPECT_TRUE(root.exists("/lib/modules/6.1.0-56-amd64/updates/dkms/p2ptest.ko"));
  EXPECT_TRUE(dkms.installed);
}

TEST(DriverModule, NoHeadersIsAFailureThatNamesThePackage) {
  Box box;
  fs::remove_all(box.dir / "lib/modules");
  write_module_source(box);
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  const Profile p = module_profile(box);
  Inventory inv;
  inv.kernel.release = kKernel;
  ApplyContext ctx{root, runner, p};
  auto r = make_driver_module()->apply(ctx, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::failed);
  EXPECT_NE(r[0].message.find("linux-headers-6.1.0-56-amd64"), std::string::npos);
}

TEST(DriverModule, ConflictsAreReportedOrRemovedAfterTheInstall) {
  for (const auto policy : {ConflictPolicy::report, ConflictPolicy::remove}) {
    Box box;
    write_module_source(box);
    // The stock package builds a module of the same name; an old installer left a stale copy in extra/
    // (one in kernel/ would be the kernel's own: refused, DriverHostileTree).
    box.write("var/lib/dkms/nvidia/550.54.15/source/dkms.conf", "BUILT_MODULE_NAME[0]=\"p2ptest\"\n");
    box.write("lib/modules/6.1.0-56-amd64/extra/p2ptest.ko", "old");
    const sys::SysRoot root(box.dir);
    sys::ScriptedRunner runner;
    FakeDkms dkms{box, "p2ptest", "1.5", "p2ptest"};
    dkms.install(runner);
    runner.on({"dkms", "remove"}, sys::exited_with(0));
    runner.on({"depmod"}, sys::exited_with(0));
    Profile p = module_profile(box);
    p.driver->conflicts = policy;
    Inventory inv;
    inv.kernel.release = kKernel;
    ApplyContext ctx{root, runner, p};
    auto r = make_driver_module()->apply(ctx, inv);
    EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
    EXPECT_NE(r[0].message.find("dkms nvidia/550.54.15"), std::string::npos) << r[0].message;
    EXPECT_NE(r[0].message.find("extra/p2ptest.ko"), std::string::npos) << r[0].message;
    std::size_t install_at = 0, remove_at = 0;
    for (std::size_t i = 0; i < runner.calls().size(); ++i) {
      const auto& c = runner.calls()[i];
      if (c.size() > 1 && c[1] == "install" && !install_at) { install_at = i; }
      if (c.size() > 1 && c[1] == "remove") { remove_at = i; }
    }
    if (policy == ConflictPolicy::report) {
      EXPECT_EQ(remove_at, 0u);
      EXPECT_TRUE(root.exists("/lib/modules/6.1.0-56-amd64/extra/p2ptest.ko"));
    } else {
      EXPECT_GT(remove_at, install_at);  // only once ours is installed
      EXPECT_FALSE(root.exists("/lib/modules/6.1.0-56-amd64/extra/p2ptest.ko"));
      EXPECT_TRUE(root.exists("/var/lib/p2pnode/dkms/aside/lib/modules/6.1.0-56-amd64/extra/p2ptest.ko"));
      EXPECT_EQ(runner.count("depmod"), 1u);
    }
  }
}

TEST(DriverModule, UnpacksATarballWithOneTopDirectory) {
  Box box;
  box.write("tmp-src/p2ptest-1.5/p2ptest.c", "int x;\n");
  box.write("tmp-src/p2ptest-1.5/Makefile", "obj-m += p2ptest.o\n");
  box.write("srv/0001-mark.patch", "--- a/p2ptest.c\n+++ b/p2ptest.c\n");
  const std::string tgz = (box.dir / "srv/p2ptest-1.5.tar.gz").string();
  ASSERT_EQ(std::system(("tar -czf " + tgz + " -C " + (box.dir / "tmp-src").string() + " p2ptest-1.5").c_str()), 0);
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  FakeDkms dkms{box, "p2ptest", "1.5", "p2ptest"};
  dkms.install(runner);
  runner.on({"tar"}, [](const sys::Command& c) { return sys::ProcessRunner().run(c); });
  Profile p;
  DriverSpec d;
  d.version = "1.5";
  ModuleSource ms;
  ms.name = "p2ptest";
  ms.artifact.path = "/srv/p2ptest-1.5.tar.gz";
  ms.artifact.sha256 = *lifecycle::sha256_file(root, *ms.artifact.path);
  d.kernel_module = ms;
  p.driver = d;
  Inventory inv;
  inv.kernel.release = kKernel;
  ApplyContext ctx{root, runner, p};
  auto r = make_driver_module()->apply(ctx, inv);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  EXPECT_TRUE(root.exists("/usr/src/p2ptest-1.5/p2ptest.c"));  // the top directory was stripped
  EXPECT_TRUE(root.exists("/usr/src/p2ptest-1.5/dkms.conf"));
}

TEST(DriverModule, BuiltinPatchesAreStagedWithTheirPatchMatch) {
  ModuleBench b;
  auto& [box, root, runner, dkms] = b;
  Profile p = module_profile(box);
  p.driver->kernel_module->patches.clear();
  for (const char* n : {"pci-resize-resource-exclude-bars", "io-memory-pfn"}) {
    Artifact a;
    a.builtin = n;
    p.driver->kernel_module->patches.push_back(a);
  }
  // The builtins are for NVIDIA's trees, not this stand-in: apply's trial of the patches (its own
  // tests are above) answers that they fit, so the staging is what is tested here.
  runner.on({"patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch"}, sys::exited_with(0));
  Inventory inv;
  inv.kernel.release = kKernel;
  ApplyContext ctx{root, runner, p};
  auto r = make_driver_module()->apply(ctx, inv);
  ASSERT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  const auto conf = *root.read_text("/usr/src/p2ptest-1.5/dkms.conf");
  EXPECT_NE(conf.find("PATCH[0]='01-pci-resize-resource-exclude-bars.patch'\nPATCH[1]='02-io-memory-pfn.patch'\n"
                      "PATCH_MATCH[1]='^(6\\.(10|[2-9][0-9]{1}|1[1-9]|[1-9][0-9]{2,})|(7|[8-9]|[1-9][0-9]{1,})"
                      "\\.[0-9]+)([.-]|$)'\n"),
            std::string::npos)
      << conf;
  EXPECT_EQ(*root.read_text("/usr/src/p2ptest-1.5/patches/02-io-memory-pfn.patch", 1 << 20),
            std::string(*nvidia::builtin_patch("io-memory-pfn")));
  // The identity covers the builtin's text: the stamp matches and a second apply does nothing.
  EXPECT_TRUE(make_driver_module()->plan(p, inv, root).empty());
}

// A first build that fails with a known breakage names it and its fix, puts DKMS and
// /usr/src back, keeps make.log for driver.kernels, and driver.reload asks for no reboot.
TEST(DriverModule, FailedFirstBuildNamesTheBreakageAndNoRebootIsAsked) {
  Box box;
  write_module_source(box);
  box.write("boot/vmlinuz-6.1.0-56-amd64", "");
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  FakeDkms dkms{box, "p2ptest", "550.90.07", "p2ptest"};
  std::ifstream real(fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures/make-logs/550.90.07-p2p-6.1.0-56-amd64.make.log");
  dkms.make_log.assign(std::istreambuf_iterator<char>(real), std::istreambuf_iterator<char>());
  ASSERT_NE(dkms.make_log.find("pci_resize_resource"), std::string::npos);
  dkms.build_exit = 10;
  dkms.install(runner);
  Profile p = module_profile(box);
  p.driver->version = "550.90.07";  // a branch the breakage lists
  Inventory inv;
  inv.kernel.release = kKernel;
  ApplyContext ctx{root, runner, p};
  auto r = make_driver_module()->apply(ctx, inv);
  ASSERT_EQ(r[0].outcome, StepOutcome::failed);
  const auto& m = r[0].message;
  EXPECT_NE(m.find("nv-pci.c:234:9: error: too few arguments to function"), std::string::npos) << m;
  EXPECT_NE(m.find("known breakage pci-resize-resource-exclude-bars"), std::string::npos) << m;
  EXPECT_NE(m.find("add {builtin: pci-resize-resource-exclude-bars} to driver.kernel_module.patches"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("nothing was installed: DKMS and /usr/src were put back as they were"), std::string::npos) << m;
  EXPECT_NE(m.find("a reboot into [\"6.1.0-56-amd64\"] would come up without p2ptest/550.90.07"), std::string::npos)
      << m;
  EXPECT_EQ(r[0].after["breakages"], nlohmann::json::array({"pci-resize-resource-exclude-bars"}));
  EXPECT_EQ(dkms.removes, 1);
  EXPECT_FALSE(dkms.added);
  EXPECT_FALSE(root.exists("/usr/src/p2ptest-550.90.07"));
  const std::string kept = "/var/lib/p2pnode/dkms/failed/p2ptest/550.90.07/6.1.0-56-amd64/make.log";
  ASSERT_TRUE(root.exists(kept));
  EXPECT_EQ(*root.read_text(kept, 1 << 20), dkms.make_log);
  EXPECT_NE(m.find("make.log: " + kept), std::string::npos) << m;

  // driver.reload: no module for the running kernel -> a failure, never "reboot to load".
  box.write("usr/src/nvidia-p2p-550.90.07/kernel-open/Makefile", "");  // as if an NVIDIA tree were managed
  Profile pr;
  DriverSpec d;
  d.version = "550.90.07";
  d.kernel_module = ModuleSource{};
  pr.driver = d;
  const auto steps = make_driver_reload()->plan(pr, inv, root);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_FALSE(steps[0].reboot_required);
  EXPECT_TRUE(steps[0].needs_operator);
  ApplyContext rctx{root, runner, pr};
  const auto rr = make_driver_reload()->apply(rctx, inv);
  EXPECT_EQ(rr[0].outcome, StepOutcome::failed);
  EXPECT_EQ(rr[0].message.find("reboot to load"), std::string::npos) << rr[0].message;
  EXPECT_NE(rr[0].message.find("not asking for a reboot"), std::string::npos) << rr[0].message;
}

// A build for a kernel that is not running says which kernel has P2P after the reboot.
TEST(DriverModule, BuiltForTheNextBootKernelOnlySaysSo) {
  Box box;
  write_module_source(box);
  box.write("boot/vmlinuz-6.1.0-56-amd64", "");
  box.write("boot/vmlinuz-6.1.0-55-amd64", "");
  fs::create_directories(box.dir / "lib/modules/6.1.0-55-amd64/kernel");  // running, no headers
  const sys::SysRoot root(box.dir);
  sys::ScriptedRunner runner;
  FakeDkms dkms{box, "p2ptest", "1.5", "p2ptest"};
  dkms.install(runner);
  const Profile p = module_profile(box);
  Inventory inv;
  inv.kernel.release = "6.1.0-55-amd64";
  ApplyContext ctx{root, runner, p};
  auto r = make_driver_module()->apply(ctx, inv);
  ASSERT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  EXPECT_NE(r[0].message.find("the running kernel 6.1.0-55-amd64 does not have it: after a reboot into 6.1.0-56-amd64 "
                              "(the next boot kernel: the newest /boot/vmlinuz-* (6.1.0-56-amd64))"),
            std::string::npos)
      << r[0].message;
  EXPECT_EQ(r[0].after["next_boot_kernel"], "6.1.0-56-amd64");
}

}  // namespace
}  // namespace p2pnode::actions
