// Hostile trees through driver.module's apply: a tarball whose one entry is a link
// to a directory, special files in a tarball, links that stay inside a tree by their text but leave
// it once followed, `patches` as a link, a kbuild tree naming one of the kernel's own modules, and a
// git source whose URL carries a password. Each is refused before anything reaches /usr/src or DKMS.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "actions/driver_install.hpp"
#include "driver_fixture.hpp"
#include "engine/state.hpp"
#include "engine/views.hpp"
#include "lifecycle/artifact.hpp"
#include "lifecycle/module_install.hpp"
#include "nvidia/sha256.hpp"

namespace p2pnode::actions {
namespace {
namespace fs = std::filesystem;

// driver.module's apply of `p` on the bench (tar runs for real), with its log lines.
StepResult apply_hostile(ModuleBench& b, const Profile& p, std::vector<std::string>* log = nullptr) {
  b.runner.on({"tar"}, [](const sys::Command& c) { return sys::ProcessRunner().run(c); });
  Inventory inv;
  inv.kernel.release = kKernel;
  ApplyContext ctx{b.root, b.runner, p};
  ctx.log = [&](std::string_view, std::string_view, std::string_view l) {
    if (log) { log->emplace_back(l); }
  };
  auto r = make_driver_module()->apply(ctx, inv);
  EXPECT_EQ(r.size(), 1u);
  return r.empty() ? StepResult{} : r[0];
}

// A profile whose source is the file `tarball` (in the box), pinned by its sha256, no patches.
Profile tarball_profile(const Box& box, const std::string& tarball) {
  Profile p = source_profile(box, "/srv/src", {});
  p.driver->kernel_module->artifact.path = tarball;
  p.driver->kernel_module->artifact.sha256 = *lifecycle::sha256_file(sys::SysRoot(box.dir), tarball);
  return p;
}

// What apply must not have done when it refuses a tree: nothing in /usr/src, no DKMS call but status.
void expect_nothing_placed(ModuleBench& b) {
  EXPECT_FALSE(b.root.exists("/usr/src/p2ptest-1.5"));
  EXPECT_EQ(b.dkms.builds, 0);
  EXPECT_FALSE(b.dkms.added);
}

// The digest a tree's listing gives (lifecycle/artifact.hpp): "<sha256>  ./path" lines in path order.
std::string listing_sha256(std::vector<std::pair<std::string, std::string>> lines) {
  std::sort(lines.begin(), lines.end());
  std::string text;
  for (const auto& [path, sha] : lines) { text += sha + "  ./" + path + "\n"; }
  return nvidia::sha256_hex(text);
}

// A tarball of one entry, a symbolic link to a directory outside: unpacked, it became the staging
// folder itself (dkms.conf and patches/ written outside, /usr/src/<pkg> a link to it).
TEST(DriverHostileTree, ATarballWhoseOneEntryIsALinkToADirectoryIsRefused) {
  ModuleBench b;
  b.box.write("outside/Makefile", "obj-m += p2ptest.o\n");
  b.box.write("outside/p2ptest.c", "int x;\n");
  fs::create_directories(b.box.dir / "tmp-src");
  fs::create_symlink(b.box.dir / "outside", b.box.dir / "tmp-src/p2ptest-1.5");
  ASSERT_EQ(std::system(("tar -cf " + (b.box.dir / "srv/link.tar").string() + " -C " +
                         (b.box.dir / "tmp-src").string() + " p2ptest-1.5")
                            .c_str()),
            0);
  Profile p = tarball_profile(b.box, "/srv/link.tar");
  p.driver->kernel_module->patches = module_profile(b.box).driver->kernel_module->patches;
  const auto r = apply_hostile(b, p);
  EXPECT_EQ(r.outcome, StepOutcome::refused) << r.message;
  EXPECT_NE(r.message.find("./p2ptest-1.5"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("symbolic link"), std::string::npos) << r.message;
  EXPECT_FALSE(fs::exists(b.box.dir / "outside/dkms.conf"));
  EXPECT_FALSE(fs::exists(b.box.dir / "outside/patches"));
  EXPECT_EQ(fs::symlink_status(b.box.dir / "usr/src/p2ptest-1.5").type(), fs::file_type::not_found);
  expect_nothing_placed(b);
}

// Device nodes and FIFOs in a tarball: tar as root would create them (a block device readable by
// all, for a moment, in p2pnode's state). Refused from the archive's listing, before it is unpacked.
TEST(DriverHostileTree, ATarballWithADeviceNodeOrAFifoIsRefusedBeforeUnpacking) {
  for (const auto& [member, kind, what] :
       {std::tuple<std::string, std::string, std::string>{"sda", "CHRTYPE", "a character device"},
        {"loop0", "BLKTYPE", "a block device"},
        {"pipe", "FIFOTYPE", "a FIFO"}}) {
    SCOPED_TRACE(member);
    ModuleBench b;
    const std::string tar = (b.box.dir / "srv/special.tar").string();
    const std::string make =
        "/usr/bin/python3 -c \"import tarfile, io\n"
        "t = tarfile.open('" +
        tar +
        "', 'w')\n"
        "for name, d in (('p2ptest-1.5/Makefile', b'obj-m += p2ptest.o\\\\n'), ('p2ptest-1.5/p2ptest.c', b'int "
        "x;\\\\n')):\n"
        "    i = tarfile.TarInfo(name); i.size = len(d); t.addfile(i, io.BytesIO(d))\n"
        "i = tarfile.TarInfo('p2ptest-1.5/" +
        member + "'); i.type = tarfile." + kind +
        "; i.mode = 0o666\n"
        "i.devmajor = 8; i.devminor = 0; t.addfile(i)\n"
        "t.close()\"";
    ASSERT_EQ(std::system(make.c_str()), 0);
    const auto r = apply_hostile(b, tarball_profile(b.box, "/srv/special.tar"));
    EXPECT_EQ(r.outcome, StepOutcome::refused) << r.message;
    EXPECT_NE(r.message.find("p2ptest-1.5/" + member + " is " + what), std::string::npos) << r.message;
    // Never created, not even in the staging folder.
    for (const auto& e : fs::recursive_directory_iterator(b.box.dir)) {
      EXPECT_NE(e.path().filename(), member) << e.path();
    }
    expect_nothing_placed(b);
  }
}

// Links whose text stays inside the tree and whose resolution does not (a/b/p -> .. makes
// a/b/q1 -> p/../.. the tree's parent), with patches/ through them: the patch was written outside.
TEST(DriverHostileTree, LinksThatLeaveTheTreeOnceFollowedAreRefused) {
  ModuleBench b;
  Profile p = module_profile(b.box);  // before the links: their tree has no digest to compute now
  fs::create_directories(b.box.dir / "srv/src/a/b");
  fs::create_symlink("..", b.box.dir / "srv/src/a/b/p");
  fs::create_symlink("p/../..", b.box.dir / "srv/src/a/b/q1");
  fs::create_symlink("a/b/q1", b.box.dir / "srv/src/patches");
  p.driver->kernel_module->artifact.sha256 = listing_sha256({{"Makefile", nvidia::sha256_hex("obj-m += p2ptest.o\n")},
                                                             {"p2ptest.c", nvidia::sha256_hex("int x;\n")},
                                                             {"a/b/p", nvidia::sha256_hex("..")},
                                                             {"a/b/q1", nvidia::sha256_hex("p/../..")},
                                                             {"patches", nvidia::sha256_hex("a/b/q1")}});
  const auto r = apply_hostile(b, p);
  EXPECT_EQ(r.outcome, StepOutcome::refused) << r.message;
  EXPECT_NE(r.message.find("./a/b/q1"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("outside the tree"), std::string::npos) << r.message;
  EXPECT_FALSE(b.root.exists("/var/lib/p2pnode/dkms/stage/01-0001-mark.patch"));
  expect_nothing_placed(b);
}

// patches/ as a link that stays inside the tree: p2pnode writes the profile's patches there, so it
// must be the tree's own folder.
TEST(DriverHostileTree, PatchesAsALinkIsRefused) {
  ModuleBench b;
  b.box.write("srv/src/other/README", "x\n");
  fs::create_symlink("other", b.box.dir / "srv/src/patches");
  Profile p = module_profile(b.box);
  const auto r = apply_hostile(b, p);
  EXPECT_EQ(r.outcome, StepOutcome::refused) << r.message;
  EXPECT_NE(r.message.find("./patches is a symbolic link"), std::string::npos) << r.message;
  EXPECT_FALSE(b.root.exists("/srv/src/other/01-0001-mark.patch"));
  expect_nothing_placed(b);
}

// A kbuild tree naming one of the running kernel's own modules: `conflicts: remove` moved the
// distribution's nvme.ko (the boot drive's driver) aside, and DKMS's copy would have replaced it.
TEST(DriverHostileTree, AModuleNamedLikeOneOfTheKernelsOwnIsRefused) {
  const std::string k = std::string("lib/modules/") + kKernel;
  for (const auto& [obj, in_tree] :
       {std::pair<std::string, std::string>{"nvme", k + "/kernel/drivers/nvme/host/nvme.ko"},
        {"nvme_core", k + "/kernel/drivers/nvme/host/nvme-core.ko.xz"},
        {"ext4", ""}}) {
    SCOPED_TRACE(obj);
    ModuleBench b;
    b.dkms.ko = obj;
    b.box.write("srv/src/Makefile", "obj-m := " + obj + ".o\n");
    if (!in_tree.empty()) { b.box.write(in_tree, "the distribution's"); }
    b.box.write(k + "/modules.builtin", "kernel/fs/ext4/ext4.ko\nkernel/fs/jbd2/jbd2.ko\n");
    Profile p = module_profile(b.box);
    p.driver->conflicts = ConflictPolicy::remove;
    b.runner.on({"depmod"}, sys::exited_with(0));
    const auto r = apply_hostile(b, p);
    EXPECT_EQ(r.outcome, StepOutcome::refused) << r.message;
    EXPECT_NE(r.message.find("module " + obj), std::string::npos) << r.message;
    EXPECT_NE(r.message.find(kKernel), std::string::npos) << r.message;
    if (!in_tree.empty()) { EXPECT_EQ(b.root.read_text("/" + in_tree).value_or(""), "the distribution's"); }
    EXPECT_FALSE(b.root.is_dir("/var/lib/p2pnode/dkms/aside"));
    expect_nothing_placed(b);
  }
}

// NVIDIA's own names stay allowed where a kernel ships them (Ubuntu's linux-modules-nvidia).
TEST(DriverHostileTree, NvidiaModuleNamesInTheKernelTreeStayAllowed) {
  ModuleBench b;
  b.dkms.ko = "nvidia-drm";
  b.box.write("srv/src/Makefile", "obj-m += nvidia-drm.o\n");
  b.box.write(std::string("lib/modules/") + kKernel + "/kernel/nvidia-550/nvidia-drm.ko", "ubuntu's");
  const auto r = apply_hostile(b, module_profile(b.box));
  EXPECT_EQ(r.outcome, StepOutcome::changed) << r.message;
}

// A git URL's password never reaches a message, a log line or GET /v1/plan (served without a token),
// even where git's own error repeats the URL.
TEST(DriverHostileTree, AGitPasswordNeverReachesThePlanOrTheLog) {
  ModuleBench b;
  const std::string url = "https://p2p:s3cret-token@git.example.invalid/x/open-gpu-kernel-modules.git";
  b.runner.on({"git"},
              sys::exited_with(128, "",
                               "Cloning into '/var/lib/p2pnode/artifacts/git/x'...\nfatal: unable to access '" + url +
                                   "/': Could not resolve host: git.example.invalid\n"));
  Profile p = module_profile(b.box);
  p.driver->kernel_module->artifact.path.reset();
  p.driver->kernel_module->artifact.git = url;
  p.driver->kernel_module->artifact.branch = "550.90.07-p2p";
  std::vector<std::string> log;
  const auto r = apply_hostile(b, p, &log);
  EXPECT_NE(r.outcome, StepOutcome::changed);
  EXPECT_NE(r.message.find("git.example.invalid"), std::string::npos) << r.message;
  engine::RecordedState s;
  Inventory inv;
  inv.kernel.release = kKernel;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : make_driver_module()->plan(p, inv, b.root)) { steps.push_back(to_json(step)); }
  s.plan = {{"steps", steps}};
  s.applied = nlohmann::json::array({to_json(r)});
  const std::string body = engine::plan_body(s).dump();
  EXPECT_EQ(body.find("s3cret"), std::string::npos) << body;
  EXPECT_NE(body.find("git.example.invalid"), std::string::npos) << body;
  for (const auto& l : log) { EXPECT_EQ(l.find("s3cret"), std::string::npos) << l; }
}

}  // namespace
}  // namespace p2pnode::actions
