#pragma once
// The driver actions' test bench: a temp-dir root (Box) and a DKMS stand-in (FakeDkms) on a
// ScriptedRunner that writes the files DKMS would, for every kernel it is asked to build for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "actions/driver_install.hpp"
#include "core/profile.hpp"
#include "lifecycle/artifact.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::actions {

inline constexpr const char* kKernel = "6.1.0-56-amd64";

struct Box {
  p2pnode::test::TempDir tmp{"driver"};
  std::filesystem::path dir = tmp.path();
  Box() { std::filesystem::create_directories(dir / "lib/modules" / kKernel / "build"); }
  void write(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel, std::ios::binary) << text;
  }
};

// A DKMS stand-in: remembers added/built/installed per kernel and writes the files DKMS would.
struct FakeDkms {
  const Box& box;
  std::string name, version, ko;
  std::vector<std::string> more_kos;      // other modules the package installs (nvidia-modeset, …)
  bool added = false, installed = false;  // installed: for at least one kernel
  int build_exit = 0;
  int builds = 0, removes = 0;
  int status_calls = 0;
  int status_hang_from = -1;  // >= 0: that `dkms status` call and later ones time out (a loaded box)
  std::string status_error;   // non-empty: `dkms status` exits 1 with these lines on stderr
  std::set<std::string> installed_kernels;
  std::vector<std::string> built_kernels;  // every non-trial `dkms build -k`, in order
  std::vector<std::string> sources_seen;   // the file `check_in_source` names, as each build found it
  std::string check_in_source;             // a path under /usr/src/<name>-<version> to look at when building
  std::string make_log = "x.c:3:1: error: expected ';' before '}' token\nmake: *** Error 1\n";

  static std::string arg(const sys::Command& c, const std::string& flag) {
    const auto it = std::find(c.argv.begin(), c.argv.end(), flag);
    return it != c.argv.end() && it + 1 != c.argv.end() ? *(it + 1) : std::string(kKernel);
  }

  void install(sys::ScriptedRunner& r) {
    // GNU patch itself: apply tries every staged patch on a scratch copy before any build.
    r.on({"patch"}, [](const sys::Command& c) { return sys::ProcessRunner().run(c); });
    r.on({"dkms", "status"}, [this](const sys::Command&) {
      if (!status_error.empty()) { return sys::exited_with(1, "", status_error); }
      if (status_hang_from >= 0 && status_calls++ >= status_hang_from) {
        sys::CommandResult t;
        t.timed_out = true;
        return t;
      }
      std::string out;
      for (const auto& k : installed_kernels) { out += name + "/" + version + ", " + k + ", x86_64: installed\n"; }
      if (out.empty() && added) { out = name + "/" + version + ": added\n"; }
      return sys::exited_with(0, out);
    });
    r.on({"dkms", "add"}, [this](const sys::Command&) {
      added = true;
      return sys::exited_with(0, "Creating symlink /var/lib/dkms/" + name + "/" + version + "/source\n");
    });
    r.on({"dkms", "build"}, [this](const sys::Command& c) {
      ++builds;
      // DKMS under an outer make's MAKELEVEL breaks NVIDIA's build (daemon/lifecycle/dkms_run.cpp).
      EXPECT_NE(std::find(c.unset_env.begin(), c.unset_env.end(), "MAKELEVEL"), c.unset_env.end());
      const bool trial = std::find(c.argv.begin(), c.argv.end(), "--dkmstree") != c.argv.end();
      const std::string k = arg(c, "-k");
      if (build_exit) {
        const std::filesystem::path logdir =
            trial ? std::filesystem::path(arg(c, "--dkmstree")) / name / version / "build"
                  : box.dir / "var/lib/dkms" / name / version / "build";
        std::filesystem::create_directories(logdir);
        std::ofstream(logdir / "make.log") << make_log;
        return sys::exited_with(build_exit, "Building module:\n",
                                "Error! Bad return status for module build on kernel: " + k + " (x86_64)\n");
      }
      if (!trial) {
        built_kernels.push_back(k);
        if (!check_in_source.empty()) {
          std::ifstream f(box.dir / "usr/src" / (name + "-" + version) / check_in_source, std::ios::binary);
          sources_seen.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        }
        std::filesystem::create_directories(box.dir / "var/lib/dkms" / name / version / k / "x86_64/module");
      }
      return sys::exited_with(0, "Building module:\ncleaning build area...\n");
    });
    r.on({"dkms", "remove"}, [this](const sys::Command&) {
      ++removes;
      added = false;
      return sys::exited_with(0);
    });
    r.on({"dkms", "install"}, [this](const sys::Command& c) {
      const std::string k = arg(c, "-k");
      std::filesystem::create_directories(box.dir / "lib/modules" / k / "updates/dkms");
      std::ofstream(box.dir / "lib/modules" / k / "updates/dkms" / (ko + ".ko")) << "ko";
      for (const auto& m : more_kos) {
        std::ofstream(box.dir / "lib/modules" / k / "updates/dkms" / (m + ".ko")) << "ko";
      }
      installed = true;
      installed_kernels.insert(k);
      return sys::exited_with(0);
    });
  }
};

// A profile whose driver.kernel_module is the tree at `src` (in the box) with `patches`.
inline Profile source_profile(const Box& box, const std::string& src, std::vector<Artifact> patches) {
  Profile p;
  p.name = "t";
  DriverSpec d;
  d.version = "1.5";
  ModuleSource ms;
  ms.name = "p2ptest";
  ms.artifact.path = src;
  ms.artifact.sha256 = *lifecycle::sha256_tree(sys::SysRoot(box.dir), src);
  ms.patches = std::move(patches);
  d.kernel_module = ms;
  p.driver = d;
  return p;
}

inline Profile module_profile(const Box& box, const std::string& patch_sha = {}) {
  Artifact patch;
  patch.path = "/srv/0001-mark.patch";
  patch.sha256 = patch_sha.empty() ? *lifecycle::sha256_file(sys::SysRoot(box.dir), "/srv/0001-mark.patch") : patch_sha;
  return source_profile(box, "/srv/src", {patch});
}

inline void write_module_source(const Box& box) {
  box.write("srv/src/p2ptest.c", "int x;\n");
  box.write("srv/src/Makefile", "obj-m += p2ptest.o\n");
  box.write("srv/0001-mark.patch", "--- a/p2ptest.c\n+++ b/p2ptest.c\n@@ -1 +1 @@\n-int x;\n+int y;\n");
}

// The small Kbuild module (write_module_source) in a box, DKMS played by FakeDkms: most driver
// tests start here (`ModuleBench b; auto& [box, root, runner, dkms] = b;`).
struct ModuleBench {
  Box box;
  sys::SysRoot root{box.dir};
  sys::ScriptedRunner runner;
  FakeDkms dkms{box, "p2ptest", "1.5", "p2ptest"};
  ModuleBench() {
    write_module_source(box);
    dkms.install(runner);
  }
};

// One driver.module apply on the bench, the running kernel kKernel.
inline StepResult apply_module_once(ModuleBench& b, const Profile& p) {
  Inventory inv;
  inv.kernel.release = kKernel;
  ApplyContext ctx{b.root, b.runner, p};
  auto r = make_driver_module()->apply(ctx, inv);
  EXPECT_EQ(r.size(), 1u);
  return r.empty() ? StepResult{} : r[0];
}

}  // namespace p2pnode::actions
