// find_userspace_driver: the libcuda the dynamic loader would load, and which source said so, on
// the generated root whose libcuda lives in /opt/nvidia/lib64 (tests/fixtures/ldcache/nvidia-opt),
// temp-dir roots, and a ScriptedRunner playing ldconfig and nvidia-smi.
#include "nvidia/userspace.hpp"
#include "unit/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace p2pnode::nvidia {
namespace {
namespace fs = std::filesystem;
const fs::path kOpt = fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures/ldcache/nvidia-opt";

struct TempRoot {
  p2pnode::test::TempDir tmp{"userspace"};
  fs::path dir = tmp.path();
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << text;
  }
};

TEST(UserspaceDriver, LdSoCacheFindsLibcudaOutsideTheDefaultDirectories) {
  const auto u = find_userspace_driver(sys::SysRoot(kOpt));
  ASSERT_TRUE(u.version) << u.note;
  EXPECT_EQ(*u.version, "580.159.04");
  EXPECT_EQ(u.source, "ld.so.cache");
  EXPECT_EQ(u.path, "/opt/nvidia/lib64/libcuda.so.580.159.04");
}

TEST(UserspaceDriver, TheCacheWinsOverAStaleFileInADefaultDirectory) {
  TempRoot t;
  fs::copy(kOpt, t.dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  t.write("usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01", "");  // left behind by an old installer
  const auto u = find_userspace_driver(sys::SysRoot(t.dir));
  ASSERT_TRUE(u.version);
  EXPECT_EQ(*u.version, "580.159.04");
  EXPECT_EQ(u.source, "ld.so.cache");
}

TEST(UserspaceDriver, WithoutACacheTheDefaultDirectoriesAnswer) {
  TempRoot t;
  t.write("usr/lib64/libcuda.so.550.90.07", "");
  const auto u = find_userspace_driver(sys::SysRoot(t.dir));
  ASSERT_TRUE(u.version);
  EXPECT_EQ(*u.version, "550.90.07");
  EXPECT_EQ(u.source, "libdir");
  EXPECT_EQ(u.path, "/usr/lib64/libcuda.so.550.90.07");
  EXPECT_TRUE(u.note.empty());
}

TEST(UserspaceDriver, AGarbageCacheIsNotedAndTheDirectoriesAnswer) {
  TempRoot t;
  t.write("etc/ld.so.cache", "garbage");
  t.write("usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07", "");
  const auto u = find_userspace_driver(sys::SysRoot(t.dir));
  ASSERT_TRUE(u.version);
  EXPECT_EQ(u.source, "libdir");
  EXPECT_NE(u.note.find("/etc/ld.so.cache not decoded: ld.so.cache: at byte 0: not an ld.so.cache"), std::string::npos)
      << u.note;
}

TEST(UserspaceDriver, NothingFoundSaysNoSource) {
  TempRoot t;
  const auto u = find_userspace_driver(sys::SysRoot(t.dir));
  EXPECT_FALSE(u.version);
  EXPECT_EQ(u.source, "");
}

TEST(UserspaceDriver, LdconfigAnswersWhenTheFilesDoNot) {
  TempRoot t;  // the library exists (the link tells the version), but no cache file is readable
  fs::create_directories(t.dir / "usr/local/cuda/lib64");
  t.write("usr/local/cuda/lib64/libcuda.so.580.159.04", "");
  fs::create_symlink("libcuda.so.580.159.04", t.dir / "usr/local/cuda/lib64/libcuda.so.1");
  sys::ScriptedRunner runner;
  runner.on({"ldconfig", "-p"},
            sys::exited_with(0,
                             "2 libs found in cache `/etc/ld.so.cache'\n"
                             "\tlibcuda.so.1 (libc6) => /usr/local/cuda/lib32/libcuda.so.1\n"
                             "\tlibcuda.so.1 (libc6,x86-64) => /usr/local/cuda/lib64/libcuda.so.1\n"));
  const sys::SysRoot root(t.dir);
  const auto u = find_userspace_driver_by_commands(root, runner, find_userspace_driver(root));
  ASSERT_TRUE(u.version);
  EXPECT_EQ(*u.version, "580.159.04");
  EXPECT_EQ(u.source, "ldconfig -p");
  EXPECT_EQ(runner.count("nvidia-smi"), 0u);
}

TEST(UserspaceDriver, NvidiaSmiIsTheLastResort) {
  TempRoot t;
  sys::ScriptedRunner runner;
  runner.on({"ldconfig", "-p"}, sys::exited_with(0, "0 libs found in cache `/etc/ld.so.cache'\n"));
  runner.on({"nvidia-smi"}, sys::exited_with(0, "580.159.04\n580.159.04\n"));
  const auto u = find_userspace_driver_by_commands(sys::SysRoot(t.dir), runner, {});
  ASSERT_TRUE(u.version);
  EXPECT_EQ(*u.version, "580.159.04");
  EXPECT_EQ(u.source, "nvidia-smi");
}

TEST(UserspaceDriver, NoCommandRunsWhenTheFilesAnswered) {
  sys::ScriptedRunner runner;
  const sys::SysRoot root(kOpt);
  const auto u = find_userspace_driver_by_commands(root, runner, find_userspace_driver(root));
  EXPECT_EQ(u.source, "ld.so.cache");
  EXPECT_TRUE(runner.calls().empty());
}

TEST(UserspaceDriver, NothingAnswersSaysWhy) {
  TempRoot t;
  sys::ScriptedRunner runner;
  runner.on({"ldconfig", "-p"}, sys::exited_with(0, ""));
  runner.on({"nvidia-smi"},
            sys::exited_with(9, "", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\n"));
  const auto u = find_userspace_driver_by_commands(sys::SysRoot(t.dir), runner, {});
  EXPECT_FALSE(u.version);
  EXPECT_EQ(u.source, "");
  EXPECT_NE(u.note.find("nvidia-smi exit 9"), std::string::npos) << u.note;
}

}  // namespace
}  // namespace p2pnode::nvidia
