// move_tree: rename where it can, copy and remove across mounts (the units' ProtectSystem=strict
// bind mounts make /usr/src and /var/lib/p2pnode different mounts: rename fails with EXDEV).
#include "lifecycle/dkms_run.hpp"
#include "unit/temp_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace p2pnode::lifecycle {
namespace {
namespace fs = std::filesystem;

fs::path make_tree(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir / "kernel-open/nvidia");
  std::ofstream(dir / "dkms.conf") << "PACKAGE_NAME=\"nvidia\"\n";
  std::ofstream(dir / "kernel-open/nvidia/nv.c") << "int x;\n";
  fs::create_symlink("kernel-open", dir / "link");
  return dir;
}

void expect_moved(const fs::path& from, const fs::path& to) {
  EXPECT_FALSE(fs::exists(from));
  EXPECT_TRUE(fs::exists(to / "kernel-open/nvidia/nv.c"));
  EXPECT_TRUE(fs::is_symlink(to / "link"));
  std::ifstream in(to / "dkms.conf");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "PACKAGE_NAME=\"nvidia\"");
}

TEST(MoveTree, RenamesWithinAFileSystem) {
  const p2pnode::test::TempDir scratch("move-tree-same");
  const fs::path base = scratch.path();
  const auto from = make_tree(base / "a");
  ASSERT_TRUE(move_tree(from, base / "b"));
  expect_moved(from, base / "b");
}

TEST(MoveTree, CopiesAcrossMounts) {
  const fs::path shm = "/dev/shm", tmp = fs::temp_directory_path();
  struct stat a {
  }, b{};
  if (stat(shm.c_str(), &a) != 0 || stat(tmp.c_str(), &b) != 0 || a.st_dev == b.st_dev) {
    GTEST_SKIP() << "needs /dev/shm and " << tmp << " on different file systems to make rename fail with EXDEV";
  }
  const auto from = make_tree(shm / "p2pnode-move-tree-from");
  const p2pnode::test::TempDir scratch("move-tree-to");
  const fs::path to = scratch / "to";
  std::error_code ec;
  fs::rename(from, to, ec);
  ASSERT_EQ(ec, std::errc::cross_device_link) << "rename did not fail across the mounts: " << ec.message();
  ASSERT_TRUE(move_tree(from, to));
  expect_moved(from, to);
  // A single file across mounts too (a stale module moved aside).
  std::ofstream(shm / "p2pnode-move-tree-file.ko") << "ko";
  ASSERT_TRUE(move_tree(shm / "p2pnode-move-tree-file.ko", to / "file.ko"));
  EXPECT_FALSE(fs::exists(shm / "p2pnode-move-tree-file.ko"));
  EXPECT_TRUE(fs::exists(to / "file.ko"));
}

}  // namespace
}  // namespace p2pnode::lifecycle
