// The kernel-independent core of an NVIDIA open tree is built once (per source, core
// patches, compiler) and every kernel's DKMS build links it from kernel-open/*/*.o_binary.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "actions/driver_install.hpp"
#include "driver_fixture.hpp"
#include "lifecycle/build_lock.hpp"
#include "lifecycle/module_install.hpp"
#include "lifecycle/nvidia_core.hpp"
#include "nvidia/sha256.hpp"

namespace p2pnode::actions {
namespace {
namespace fs = std::filesystem;

constexpr const char* kCoreBinary = "kernel-open/nvidia/nv-kernel.o_binary";

// An open-gpu-kernel-modules tree in miniature: what stage() and the core build look at.
void write_nvidia_tree(const Box& box) {
  box.write("srv/ogkm/version.mk", "NVIDIA_VERSION = 1.5\n");
  box.write("srv/ogkm/Makefile", "modules:\n");
  box.write("srv/ogkm/kernel-open/Makefile", "");
  box.write("srv/ogkm/kernel-open/nvidia/nv-pci.c", "int pci;\n");
  box.write("srv/ogkm/kernel-open/nvidia-modeset/nvidia-modeset.Kbuild", "");
  box.write("srv/ogkm/src/nvidia/core.c", "int rm;\n");
  box.write("srv/ogkm/src/nvidia-modeset/core.c", "int kms;\n");
}

Profile nvidia_profile(const Box& box, std::vector<Artifact> patches = {}) {
  return source_profile(box, "/srv/ogkm", std::move(patches));
}

Artifact builtin(const char* name) {
  Artifact a;
  a.builtin = name;
  return a;
}

// The compiler, linker and NVIDIA's core Makefile: `make -C <tree>/src/nvidia` writes
// _out/Linux_x86_64/nv-kernel.o holding the compiler's name and the core's source.
struct FakeToolchain {
  std::string gcc = "gcc (Debian 12.2.0-14) 12.2.0";
  int make_exit = 0;
  std::vector<std::string> made;  // the directories make was run in

  void install(sys::ScriptedRunner& r) {
    r.on({"gcc", "--version"}, [this](const sys::Command&) { return sys::exited_with(0, gcc + "\nCopyright\n"); });
    r.on({"g++", "--version"}, sys::exited_with(0, "g++ (Debian 12.2.0-14) 12.2.0\nCopyright\n"));
    r.on({"ld", "--version"}, sys::exited_with(0, "GNU ld (GNU Binutils for Debian) 2.40\n"));
    r.on({"uname", "-m"}, sys::exited_with(0, "x86_64\n"));
    r.on({"patch"}, [](const sys::Command& c) { return sys::ProcessRunner().run(c); });
    // apply's trial of every patch (driver_install_test covers it) on this stand-in tree, which
    // lacks the files the builtins change: answered as fitting; the core's own patching stays real.
    r.on({"patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch"}, sys::exited_with(0));
    r.on({"make", "-C"}, [this](const sys::Command& c) {
      const fs::path dir = c.argv[2];
      // Not a sub-make of whatever ran p2pnode (`make test`): see daemon/lifecycle/dkms_run.cpp.
      for (const char* v : {"MAKEFLAGS", "MAKELEVEL", "MFLAGS"}) {
        EXPECT_NE(std::find(c.unset_env.begin(), c.unset_env.end(), v), c.unset_env.end()) << v;
      }
      made.push_back(dir.parent_path().filename().string() + "/" + dir.filename().string());
      if (c.on_line) { c.on_line("   CC     _out/Linux_x86_64/core.o", false); }
      if (make_exit) {
        if (c.on_line) { c.on_line("core.c:1:5: error: 'rm' undeclared", false); }
        return sys::exited_with(make_exit, "", "make: *** [core.o] Error 1\n");
      }
      std::ifstream src(dir / "core.c");
      const std::string text((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
      const std::string obj = dir.filename() == "nvidia" ? "nv-kernel.o" : "nv-modeset-kernel.o";
      fs::create_directories(dir / "_out/Linux_x86_64");
      std::ofstream(dir / "_out/Linux_x86_64" / obj) << "object by " << gcc << " of " << text;
      return sys::exited_with(0);
    });
  }
};

struct Bench {
  Box box;
  sys::SysRoot root{box.dir};
  sys::ScriptedRunner runner;
  FakeDkms dkms{box, "p2ptest", "1.5", "nvidia"};
  FakeToolchain tools;
  Inventory inv;
  Bench() {
    write_nvidia_tree(box);
    fs::create_directories(box.dir / "lib/modules/6.1.0-55-amd64/build");
    dkms.check_in_source = kCoreBinary;
    dkms.more_kos = {"nvidia-modeset"};
    dkms.install(runner);
    tools.install(runner);
    inv.kernel.release = kKernel;
  }
  StepResult apply(const Profile& p) {
    ApplyContext ctx{root, runner, p};
    ctx.log = [this](std::string_view, std::string_view, std::string_view l) { log.emplace_back(l); };
    return make_driver_module()->apply(ctx, inv).at(0);
  }
  std::vector<std::string> cache_entries() const {
    std::vector<std::string> out;
    for (const auto& e : root.list_dir(lifecycle::kCoreCacheDir)) { out.push_back(e); }
    return out;
  }
  std::vector<std::string> log;
};

TEST(DriverCore, BuiltOnceAndLinkedByEveryKernelsBuild) {
  Bench b;
  // update-initramfs runs for the kernels whose modules an apply installed, not for those in place,
  // when the initramfs carries one of them (here: initramfs-tools' modules list names nvidia_modeset).
  std::vector<std::string> initramfs;
  b.box.write("usr/sbin/update-initramfs", "");
  fs::create_directories(b.box.dir / "etc/initramfs-tools");
  b.box.write("etc/initramfs-tools/modules", "# List of modules\nnvidia_modeset\n");
  for (const char* k : {"6.1.0-55-amd64", kKernel, "6.1.0-57-amd64"}) {
    b.box.write(std::string("boot/initrd.img-") + k, "");
  }
  b.runner.on({"update-initramfs"}, [&](const sys::Command& c) {
    initramfs.push_back(c.argv.back());
    return sys::exited_with(0);
  });
  const Profile p = nvidia_profile(b.box, {builtin("pci-resize-resource-exclude-bars"), builtin("io-memory-pfn")});
  auto r = b.apply(p);
  ASSERT_EQ(r.outcome, StepOutcome::changed) << r.message;
  // Two kernels, one core: make ran once per object, DKMS once per kernel.
  EXPECT_EQ(b.tools.made, (std::vector<std::string>{"src/nvidia", "src/nvidia-modeset"}));
  EXPECT_EQ(b.dkms.built_kernels, (std::vector<std::string>{"6.1.0-55-amd64", kKernel}));
  // Each kernel's build found the core in the DKMS source, as a file (not a link into a build tree).
  ASSERT_EQ(b.dkms.sources_seen.size(), 2u);
  for (const auto& s : b.dkms.sources_seen) { EXPECT_EQ(s, "object by gcc (Debian 12.2.0-14) 12.2.0 of int rm;\n"); }
  EXPECT_FALSE(fs::is_symlink(b.box.dir / "usr/src/p2ptest-1.5" / kCoreBinary));
  EXPECT_EQ(*b.root.read_text("/usr/src/p2ptest-1.5/kernel-open/nvidia-modeset/nv-modeset-kernel.o_binary"),
            "object by gcc (Debian 12.2.0-14) 12.2.0 of int kms;\n");
  // dkms.conf builds kernel-open/ only; both builtins touch kernel-open/ only, so the core serves
  // every kernel even though io-memory-pfn applies to some kernels only.
  const auto conf = *b.root.read_text("/usr/src/p2ptest-1.5/dkms.conf");
  EXPECT_NE(conf.find("MAKE[0]=''\\''make'\\'' -j$(nproc) -C kernel-open modules KERNEL_UNAME=${kernelver}'"),
            std::string::npos)
      << conf;
  EXPECT_EQ(r.after["core"]["from_cache"], false);
  const std::string key = r.after["core"]["key"];
  ASSERT_EQ(key.size(), 64u);
  const auto info =
      nlohmann::json::parse(*b.root.read_text(std::string(lifecycle::kCoreCacheDir) + "/" + key + "/core.json"));
  EXPECT_EQ(info["compiler"], "gcc (Debian 12.2.0-14) 12.2.0; g++ (Debian 12.2.0-14) 12.2.0");
  EXPECT_EQ(info["patch_sha256"], nlohmann::json::array());  // no patch changes the core
  EXPECT_EQ(info["objects"]["nv-kernel.o"], nvidia::sha256_hex("object by gcc (Debian 12.2.0-14) 12.2.0 of int rm;\n"));
  EXPECT_FALSE(b.root.exists("/var/lib/p2pnode/dkms/core-build"));  // the scratch copy is gone
  EXPECT_TRUE(std::any_of(b.log.begin(), b.log.end(), [](const auto& l) { return l.find("core: built in") == 0; }));
  EXPECT_EQ(initramfs, (std::vector<std::string>{"6.1.0-55-amd64", kKernel}));

  // A kernel installed later: the core comes from the cache; DKMS builds kernel-open/ for it alone.
  fs::create_directories(b.box.dir / "lib/modules/6.1.0-57-amd64/build");
  r = b.apply(p);
  ASSERT_EQ(r.outcome, StepOutcome::changed) << r.message;
  EXPECT_EQ(b.tools.made.size(), 2u);
  EXPECT_EQ(b.dkms.built_kernels.back(), "6.1.0-57-amd64");
  EXPECT_EQ(b.dkms.built_kernels.size(), 3u);
  EXPECT_EQ(b.dkms.sources_seen.back(), "object by gcc (Debian 12.2.0-14) 12.2.0 of int rm;\n");
  EXPECT_EQ(r.after["core"]["from_cache"], true);
  EXPECT_EQ(r.after["core"]["key"], key);
  EXPECT_EQ(initramfs, (std::vector<std::string>{"6.1.0-55-amd64", kKernel, "6.1.0-57-amd64"}));
  // And nothing to do after that.
  EXPECT_TRUE(make_driver_module()->plan(p, b.inv, b.root).empty());
}

TEST(DriverCore, AnInitramfsThatCarriesNoneOfTheModulesIsLeftAlone) {
  Bench b;
  b.box.write("usr/sbin/update-initramfs", "");
  for (const char* k : {"6.1.0-55-amd64", kKernel}) { b.box.write(std::string("boot/initrd.img-") + k, ""); }
  fs::create_directories(b.box.dir / "etc/initramfs-tools/hooks");
  b.box.write("etc/initramfs-tools/modules", "# nvidia_modeset is not wanted here\nnvme\n");
  b.box.write("etc/initramfs-tools/hooks/zfs", "#!/bin/sh\nmanual_add_modules zfs\n");
  const auto r = b.apply(nvidia_profile(b.box));
  ASSERT_EQ(r.outcome, StepOutcome::changed) << r.message;
  EXPECT_EQ(b.runner.count("update-initramfs"), 0u);
}

TEST(DriverCore, ANewCompilerOrADamagedCacheBuildsItAgain) {
  Bench b;
  const Profile p = nvidia_profile(b.box);
  const auto first = b.apply(p);
  ASSERT_EQ(first.outcome, StepOutcome::changed) << first.message;
  const std::string key = first.after["core"]["key"];
  const std::string cached = std::string(lifecycle::kCoreCacheDir) + "/" + key + "/nv-kernel.o";

  // A cached object that no longer hashes as recorded is not linked: the core is built again.
  std::ofstream(b.root.host_path(cached)) << "bit rot";
  fs::create_directories(b.box.dir / "lib/modules/6.1.0-57-amd64/build");
  auto r = b.apply(p);
  ASSERT_EQ(r.outcome, StepOutcome::changed) << r.message;
  EXPECT_EQ(b.tools.made.size(), 4u);
  EXPECT_EQ(r.after["core"]["key"], key);
  EXPECT_EQ(*b.root.read_text(cached), "object by gcc (Debian 12.2.0-14) 12.2.0 of int rm;\n");

  // Another build's work in progress is left alone; a dead build's (a day old) is removed.
  const std::string cache_dir(lifecycle::kCoreCacheDir);
  fs::create_directories(b.root.host_path(cache_dir + "/.ab12.999.tmp"));
  fs::create_directories(b.root.host_path(cache_dir + "/.cd34.998.tmp"));
  fs::last_write_time(b.root.host_path(cache_dir + "/.cd34.998.tmp"),
                      fs::file_time_type::clock::now() - std::chrono::hours(48));
  // Another compiler: another key; the cache keeps the newest two cores.
  for (const std::string k : {"6.1.0-60-amd64", "6.1.0-61-amd64"}) {
    const std::string gcc = k == "6.1.0-60-amd64" ? "gcc (Debian 13.1.0-1) 13.1.0" : "gcc (Debian 14.2.0-1) 14.2.0";
    b.tools.gcc = gcc;
    fs::create_directories(b.box.dir / "lib/modules" / k / "build");
    r = b.apply(p);
    ASSERT_EQ(r.outcome, StepOutcome::changed) << r.message;
    EXPECT_NE(r.after["core"]["key"], key);
    EXPECT_EQ(r.after["core"]["from_cache"], false);
    EXPECT_EQ(b.dkms.sources_seen.back(), "object by " + gcc + " of int rm;\n");
  }
  EXPECT_EQ(b.tools.made.size(), 8u);
  auto entries = b.cache_entries();
  EXPECT_EQ(std::count(entries.begin(), entries.end(), ".ab12.999.tmp"), 1);
  EXPECT_EQ(std::count(entries.begin(), entries.end(), ".cd34.998.tmp"), 0);
  entries.erase(std::remove(entries.begin(), entries.end(), ".ab12.999.tmp"), entries.end());
  EXPECT_EQ(entries.size(), 2u);
  EXPECT_EQ(std::count(entries.begin(), entries.end(), key), 0) << "the oldest core was not pruned";
}

TEST(DriverCore, APatchThatChangesTheCoreIsAppliedBeforeItIsBuilt) {
  Bench b;
  b.box.write("srv/0001-rm.patch",
              "--- a/src/nvidia/core.c\n+++ b/src/nvidia/core.c\n@@ -1 +1 @@\n-int rm;\n+int rm_p2p;\n");
  Artifact patch;
  patch.path = "/srv/0001-rm.patch";
  patch.sha256 = *lifecycle::sha256_file(b.root, "/srv/0001-rm.patch");
  const auto r = b.apply(nvidia_profile(b.box, {patch}));
  ASSERT_EQ(r.outcome, StepOutcome::changed) << r.message;
  EXPECT_EQ(b.dkms.sources_seen.at(0), "object by gcc (Debian 12.2.0-14) 12.2.0 of int rm_p2p;\n");
  // The source DKMS takes is as staged (DKMS applies the patch itself); the cache names the patch.
  EXPECT_EQ(*b.root.read_text("/usr/src/p2ptest-1.5/src/nvidia/core.c"), "int rm;\n");
  const auto info = nlohmann::json::parse(*b.root.read_text(std::string(lifecycle::kCoreCacheDir) + "/" +
                                                            r.after["core"]["key"].get<std::string>() + "/core.json"));
  EXPECT_EQ(info["patch_sha256"], nlohmann::json::array({patch.sha256}));
}

TEST(DriverCore, AFailedCoreBuildChangesNothingAndNamesTheError) {
  Bench b;
  b.tools.make_exit = 2;
  const auto r = b.apply(nvidia_profile(b.box));
  ASSERT_EQ(r.outcome, StepOutcome::failed);
  EXPECT_NE(r.message.find("building nv-kernel.o (src/nvidia): make exit 2"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("first error: core.c:1:5: error: 'rm' undeclared"), std::string::npos) << r.message;
  const std::string log = "/var/lib/p2pnode/dkms/logs/p2ptest-1.5-core.log";
  EXPECT_NE(r.message.find("build log: " + log), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("nothing in DKMS, /usr/src or /lib/modules was changed"), std::string::npos) << r.message;
  EXPECT_NE(b.root.read_text(log)->find("   CC     _out/Linux_x86_64/core.o\n"), std::string::npos);
  EXPECT_FALSE(b.dkms.added);
  EXPECT_EQ(b.dkms.builds, 0);
  EXPECT_FALSE(b.root.exists("/usr/src/p2ptest-1.5"));
  EXPECT_TRUE(b.cache_entries().empty());
  EXPECT_FALSE(b.root.exists("/var/lib/p2pnode/dkms/core-build"));
}

// A node with gcc but no g++ (dkms pulls in gcc only): NVIDIA's src/nvidia-modeset has C++ sources,
// so its make would fail with "Error 127" minutes into the build (seen in a Debian 13 root). The
// missing compiler is named before anything is built.
TEST(DriverCore, NoCxxCompilerIsNamedBeforeAnyBuild) {
  Bench b;
  b.runner.on({"g++", "--version"}, [](const sys::Command&) {
    sys::CommandResult r;
    r.start_failed = true;
    r.err = "No such file or directory";
    return r;
  });
  const auto r = b.apply(nvidia_profile(b.box));
  ASSERT_EQ(r.outcome, StepOutcome::failed);
  EXPECT_NE(r.message.find("g++"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("the NVIDIA tree needs build-essential"), std::string::npos) << r.message;
  EXPECT_TRUE(b.tools.made.empty());
  EXPECT_FALSE(b.dkms.added);
}

// The source once staged: the breakage table's source tests on it go to the preflight, which can
// refuse before any build (a tree that calls pci_resize_resource with three arguments), or let a
// tree that carries its own fix through.
TEST(DriverCore, ThePreflightReadsTheStagedSourceBeforeAnyBuild) {
  Bench b;
  b.box.write("srv/ogkm/kernel-open/nvidia/nv-pci.c",
              "    r = pci_resize_resource(pci_dev, NV_GPU_BAR1, requested_size);\n");
  std::map<std::string, bool> seen;
  const auto stop = [&](const std::map<std::string, bool>& t) {
    seen = t;
    return t.at("pci-resize-resource-exclude-bars") ? std::vector<std::string>{"6.1.0-55-amd64: known breakage"}
                                                    : std::vector<std::string>{};
  };
  auto log = [](std::string_view) {};
  auto r = lifecycle::install_module(b.root, b.runner, *nvidia_profile(b.box).driver, kKernel, log, stop);
  ASSERT_EQ(r.outcome, StepOutcome::refused) << r.message;
  EXPECT_NE(r.message.find("refused before any build (the staged source read): 6.1.0-55-amd64: known breakage"),
            std::string::npos)
      << r.message;
  EXPECT_TRUE(seen.at("pci-resize-resource-exclude-bars"));
  EXPECT_FALSE(seen.at("drm-output-poll-changed"));  // the tree has no nvidia-drm-drv.c
  EXPECT_TRUE(b.tools.made.empty());
  EXPECT_FALSE(b.dkms.added);
  EXPECT_FALSE(b.root.exists("/usr/src/p2ptest-1.5"));
  // NVIDIA's own conftest for the argument: the tree carries the fix, the build goes ahead.
  b.box.write("srv/ogkm/kernel-open/nvidia/nv-pci.c",
              "#if defined(NV_PCI_RESIZE_RESOURCE_HAS_EXCLUDE_BARS_ARG)\n    r = pci_resize_resource(pci_dev, 1, s, "
              "0);\n#endif\n");
  r = lifecycle::install_module(b.root, b.runner, *nvidia_profile(b.box).driver, kKernel, log, stop);
  EXPECT_FALSE(seen.at("pci-resize-resource-exclude-bars"));
  EXPECT_EQ(r.outcome, StepOutcome::changed) << r.message;
}

// The kernel hook's apply and the daemon's reconcile can start together: the second build of a
// package waits for the first (flock), then finds the module in place and builds nothing.
TEST(DriverCore, ASecondBuildOfThePackageWaitsForTheFirst) {
  Bench b;
  const Profile p = nvidia_profile(b.box);
  const auto lock = b.root.host_path(lifecycle::build_lock_path("p2ptest-1.5"));
  fs::create_directories(lock.parent_path());
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // "the other p2pnode", mid-build
  ASSERT_EQ(::write(fd, "pid 4242: p2pnode\n", 18), 18);
  std::atomic<bool> waiting{false};
  std::vector<std::string> log;
  auto first = std::async(std::launch::async, [&] {
    ApplyContext ctx{b.root, b.runner, p};
    ctx.log = [&](std::string_view, std::string_view, std::string_view l) {
      log.emplace_back(l);
      if (l.find("waiting for the build of p2ptest/1.5 in progress (pid 4242: p2pnode, ") == 0) { waiting = true; }
    };
    return make_driver_module()->apply(ctx, b.inv).at(0);
  });
  for (int i = 0; i < 500 && !waiting; ++i) { std::this_thread::sleep_for(std::chrono::milliseconds(10)); }
  EXPECT_TRUE(waiting);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(b.tools.made.empty());  // nothing built while the other one holds the lock
  EXPECT_EQ(b.dkms.builds, 0);
  ::close(fd);  // the other build ends
  const auto r = first.get();
  EXPECT_EQ(r.outcome, StepOutcome::changed) << r.message;
  EXPECT_EQ(b.dkms.builds, 2);
  // The holder is written for the next one to name; the lock is released with the descriptor.
  std::ifstream in(lock);
  std::string holder;
  std::getline(in, holder);
  EXPECT_EQ(holder.rfind("pid " + std::to_string(::getpid()) + ": ", 0), 0u) << holder;
  const int again = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  EXPECT_EQ(::flock(again, LOCK_EX | LOCK_NB), 0);
  ::close(again);
}

}  // namespace
}  // namespace p2pnode::actions
