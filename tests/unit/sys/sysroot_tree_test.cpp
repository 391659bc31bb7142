// SysRoot's tree operations: each change counted once, nothing counted when there is nothing to do,
// links copied as links and never written through, rename where it can and copy-and-remove across
// mounts (the units' ProtectSystem=strict bind mounts make /usr/src and /var/lib/p2pnode different
// mounts: rename fails with EXDEV), a FIFO or an oversized file refused by read_stream unread.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sys/sysroot.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::sys {
namespace {
namespace fs = std::filesystem;

fs::path make_tree(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir / "kernel-open/nvidia");
  fs::create_directories(dir / ".git");
  std::ofstream(dir / "dkms.conf") << "PACKAGE_NAME=\"nvidia\"\n";
  std::ofstream(dir / "kernel-open/nvidia/nv.c") << "int x;\n";
  std::ofstream(dir / ".git/HEAD") << "ref\n";
  fs::create_symlink("kernel-open", dir / "link");
  return dir;
}

std::string text_of(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void expect_tree(const fs::path& to) {
  EXPECT_EQ(text_of(to / "kernel-open/nvidia/nv.c"), "int x;\n");
  EXPECT_TRUE(fs::is_symlink(to / "link"));
  EXPECT_EQ(fs::read_symlink(to / "link"), "kernel-open");
  EXPECT_EQ(text_of(to / "dkms.conf"), "PACKAGE_NAME=\"nvidia\"\n");
}

TEST(SysRootTree, RemoveTreeCountsOnlyWhatItRemoves) {
  const test::TempDir t("tree-remove");
  make_tree(t / "a");
  const SysRoot root(t.path());
  ASSERT_TRUE(root.remove_tree("/missing"));
  EXPECT_EQ(root.write_count(), 0u);
  ASSERT_TRUE(root.remove_tree("/a"));
  EXPECT_EQ(root.write_count(), 1u);
  EXPECT_FALSE(fs::exists(t / "a"));
  // A dangling link is something to remove, and only the link goes.
  fs::create_symlink("/nowhere", t / "dangling");
  ASSERT_TRUE(root.remove_tree("/dangling"));
  EXPECT_FALSE(fs::is_symlink(t / "dangling"));
  EXPECT_EQ(root.write_count(), 2u);
}

TEST(SysRootTree, RemoveEmptyDirNeverTakesWhatIsInside) {
  const test::TempDir t("tree-rmdir");
  fs::create_directories(t / "core-build/other-build");
  fs::create_directories(t / "empty");
  const SysRoot root(t.path());
  ASSERT_TRUE(root.remove_empty_dir("/core-build"));  // another build's scratch inside: kept
  EXPECT_TRUE(fs::exists(t / "core-build/other-build"));
  ASSERT_TRUE(root.remove_empty_dir("/missing"));
  EXPECT_EQ(root.write_count(), 0u);
  ASSERT_TRUE(root.remove_empty_dir("/empty"));
  EXPECT_FALSE(fs::exists(t / "empty"));
  EXPECT_EQ(root.write_count(), 1u);
  std::ofstream(t / "file") << "x";
  EXPECT_FALSE(root.remove_empty_dir("/file"));  // not a directory: said
}

TEST(SysRootTree, CopyTreeLeavesGitOutAndKeepsLinks) {
  const test::TempDir t("tree-copy");
  make_tree(t / "src");
  const SysRoot root(t.path());
  ASSERT_TRUE(root.copy_tree("/src", "/deep/dst"));
  expect_tree(t / "deep/dst");
  EXPECT_FALSE(fs::exists(t / "deep/dst/.git"));
  EXPECT_TRUE(fs::exists(t / "src/dkms.conf"));
  EXPECT_EQ(root.write_count(), 1u);
  const auto missing = root.copy_tree("/none", "/other");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("/other"), std::string::npos) << missing.error().message;
}

TEST(SysRootTree, CopyFileReplacesALinkInsteadOfWritingThroughIt) {
  const test::TempDir t("tree-copy-file");
  std::ofstream(t / "from") << "new";
  std::ofstream(t / "victim") << "keep";
  fs::create_symlink("victim", t / "to");
  const SysRoot root(t.path());
  ASSERT_TRUE(root.copy_file("/from", "/to"));
  EXPECT_FALSE(fs::is_symlink(t / "to"));
  EXPECT_EQ(text_of(t / "to"), "new");
  EXPECT_EQ(text_of(t / "victim"), "keep");
  ASSERT_TRUE(root.copy_file("/from", "/to"));  // over a regular file too
  EXPECT_EQ(root.write_count(), 2u);
  EXPECT_FALSE(root.copy_file("/absent", "/x"));
}

TEST(SysRootTree, MoveTreeRenamesWithinAFileSystem) {
  const test::TempDir t("tree-move-same");
  make_tree(t / "a");
  const SysRoot root(t.path());
  ASSERT_TRUE(root.move_tree("/a", "/b"));
  EXPECT_FALSE(fs::exists(t / "a"));
  expect_tree(t / "b");
  EXPECT_EQ(root.write_count(), 1u);
}

TEST(SysRootTree, MoveTreeCopiesAcrossMounts) {
  const fs::path shm = "/dev/shm", tmp = fs::temp_directory_path();
  struct stat a {
  }, b{};
  if (stat(shm.c_str(), &a) != 0 || stat(tmp.c_str(), &b) != 0 || a.st_dev == b.st_dev) {
    GTEST_SKIP() << "needs /dev/shm and " << tmp << " on different file systems to make rename fail with EXDEV";
  }
  const test::TempDir scratch("tree-move-to");
  const auto from = make_tree(shm / ("p2pnode-move-tree-" + scratch.path().filename().string()));
  const fs::path to = scratch / "to";
  std::error_code ec;
  fs::rename(from, to, ec);
  ASSERT_EQ(ec, std::errc::cross_device_link) << "rename did not fail across the mounts: " << ec.message();
  const SysRoot root("/");  // in-root paths are the host's: the two mounts are the host's
  ASSERT_TRUE(root.move_tree(from.string(), to.string()));
  EXPECT_FALSE(fs::exists(from));
  expect_tree(to);
  // A single file across mounts too (a stale module moved aside).
  const fs::path ko = from.string() + ".ko";
  std::ofstream(ko) << "ko";
  ASSERT_TRUE(root.move_tree(ko.string(), (to / "file.ko").string()));
  EXPECT_FALSE(fs::exists(ko));
  EXPECT_EQ(text_of(to / "file.ko"), "ko");
}

TEST(SysRootTree, StripSetidClearsTheBitsAndCountsOnlyAChange) {
  const test::TempDir t("tree-setid");
  fs::create_directories(t / "d/sub");
  std::ofstream(t / "d/sub/sh") << "#!/bin/sh\n";
  std::ofstream(t / "d/plain") << "x";
  fs::permissions(t / "d/sub/sh", fs::perms::set_uid | fs::perms::set_gid, fs::perm_options::add);
  const SysRoot root(t.path());
  ASSERT_TRUE(root.strip_setid("/d"));
  EXPECT_EQ(fs::status(t / "d/sub/sh").permissions() & (fs::perms::set_uid | fs::perms::set_gid), fs::perms::none);
  EXPECT_EQ(root.write_count(), 1u);
  ASSERT_TRUE(root.strip_setid("/d"));  // nothing left to clear
  EXPECT_EQ(root.write_count(), 1u);
}

TEST(SysRootTree, TouchAndLstatAgreeOnTheTime) {
  const test::TempDir t("tree-touch");
  std::ofstream(t / "f") << "x";
  fs::last_write_time(t / "f", fs::file_time_type::clock::now() - std::chrono::hours(48));
  const SysRoot root(t.path());
  const auto before = root.lstat("/f");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->modified, fs::last_write_time(t / "f"));
  ASSERT_TRUE(root.touch("/f"));
  const auto after = root.lstat("/f");
  ASSERT_TRUE(after);
  EXPECT_GT(after->modified, before->modified + std::chrono::hours(47));
  EXPECT_EQ(root.write_count(), 1u);
  EXPECT_FALSE(root.touch("/missing"));
}

TEST(SysRootTree, OpenLogTruncatesAndStreams) {
  const test::TempDir t("tree-log");
  std::ofstream(t / "make.log") << "an older build's log\n";
  const SysRoot root(t.path());
  auto log = root.open_log("/make.log");
  ASSERT_TRUE(log);
  std::ofstream out = std::move(log).value();
  out << "line one\n" << std::flush;
  EXPECT_EQ(text_of(t / "make.log"), "line one\n");
  EXPECT_EQ(root.write_count(), 1u);
  EXPECT_FALSE(root.open_log("/no/such/dir/make.log"));
}

TEST(SysRootTree, ReadStreamRefusesAFifoAndAnOversizedFile) {
  const test::TempDir t("tree-stream");
  std::ofstream(t / "small") << "0123456789";
  ASSERT_EQ(::mkfifo((t / "fifo").c_str(), 0600), 0);
  const SysRoot root(t.path());
  std::string got;
  auto collect = [&](std::span<const char> c) { got.append(c.data(), c.size()); };
  ASSERT_TRUE(root.read_stream("/small", 10, "a file", collect));
  EXPECT_EQ(got, "0123456789");
  const auto big = root.read_stream("/small", 9, "a test file", collect);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().message, "/small is 10 bytes; a test file is at most 9 bytes");
  const auto fifo = root.read_stream("/fifo", 1 << 20, "a file", collect);
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().message, "/fifo is not a regular file: refusing to read it");
  fs::create_symlink("small", t / "link");
  EXPECT_FALSE(root.read_stream("/link", 1 << 20, "a file", collect));  // O_NOFOLLOW
  EXPECT_EQ(root.write_count(), 0u);
}

}  // namespace
}  // namespace p2pnode::sys
