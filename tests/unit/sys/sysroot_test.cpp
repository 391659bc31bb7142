// SysRoot on temporary trees: paths stay inside the root, links that leave it are refused,
// atomic writes leave neither temp files nor half-written files, every write is counted.
#include "sys/sysroot.hpp"
#include "unit/temp_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using p2pnode::sys::join;
using p2pnode::sys::SysRoot;

namespace {
class TempRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    fs::create_directories(dir_ / "sys/devices/pci0000:00/0000:00:01.0");
    fs::create_directories(dir_ / "sys/bus/pci/devices");
    fs::create_directories(dir_ / "etc/default");
    put("sys/devices/pci0000:00/0000:00:01.0/vendor", "0x10de\n");
    fs::create_directory_symlink("../../../devices/pci0000:00/0000:00:01.0", dir_ / "sys/bus/pci/devices/0000:00:01.0");
  }
  void put(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel, std::ios::binary) << text; }
  std::string get(const std::string& rel) {
    std::ifstream in(dir_ / rel, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::vector<std::string> names(const std::string& rel) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_ / rel)) { out.push_back(e.path().filename().string()); }
    std::sort(out.begin(), out.end());
    return out;
  }
  p2pnode::test::TempDir tmp_{"sysroot"};
  fs::path dir_;
};
}  // namespace

TEST_F(TempRoot, HostPathStaysUnderTheRoot) {
  SysRoot root(dir_);
  EXPECT_EQ(root.host_path("/sys/bus/pci"), dir_ / "sys/bus/pci");
  EXPECT_EQ(root.host_path("sys/bus/pci"), dir_ / "sys/bus/pci");
  EXPECT_EQ(SysRoot("/").host_path("/proc/cmdline"), fs::path("/proc/cmdline"));
  EXPECT_EQ(SysRoot(dir_.string() + "///").root(), dir_);
}

TEST_F(TempRoot, ReadsAttributesThroughLinks) {
  SysRoot root(dir_);
  EXPECT_EQ(*root.read_attr("/sys/bus/pci/devices/0000:00:01.0/vendor"), "0x10de");
  EXPECT_EQ(*root.read_text("/sys/bus/pci/devices/0000:00:01.0/vendor"), "0x10de\n");
  EXPECT_EQ(*root.read_link("/sys/bus/pci/devices/0000:00:01.0"), "../../../devices/pci0000:00/0000:00:01.0");
  EXPECT_EQ(*root.resolve("/sys/bus/pci/devices/0000:00:01.0"), "/sys/devices/pci0000:00/0000:00:01.0");
  EXPECT_EQ(*root.resolve("/"), "/");
  EXPECT_TRUE(root.exists("/sys/bus/pci/devices/0000:00:01.0"));
  EXPECT_TRUE(root.is_dir("/sys/bus/pci/devices/0000:00:01.0"));
  EXPECT_EQ(root.list_dir("/sys/bus/pci/devices"), (std::vector<std::string>{"0000:00:01.0"}));
  EXPECT_TRUE(root.list_dir("/sys/class/iommu").empty());  // missing directory reads as empty
}

TEST_F(TempRoot, MissingEmptyAndBoundedReads) {
  SysRoot root(dir_);
  const auto missing = root.read_attr("/sys/nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ENOENT);
  EXPECT_NE(missing.error().message.find("/sys/nothing"), std::string::npos);
  put("etc/empty", "");
  EXPECT_EQ(*root.read_attr("/etc/empty"), "");
  put("etc/big", std::string(5000, 'x'));
  EXPECT_EQ(root.read_bytes("/etc/big", 100)->size(), 100u);
  EXPECT_EQ(root.read_text("/etc/big")->size(), 5000u);
  put("etc/nul", std::string("D0\n\0\0", 5));
  EXPECT_EQ(*root.read_attr("/etc/nul"), "D0");
}

// A FIFO where a recorded root should have a file (a vendor attribute, /proc/mounts) hung `check` in
// open(); now it is refused at once, naming the path.
TEST_F(TempRoot, AFifoIsRefusedNotWaitedOn) {
  SysRoot root(dir_);
  fs::remove(dir_ / "sys/devices/pci0000:00/0000:00:01.0/vendor");
  ASSERT_EQ(::mkfifo((dir_ / "sys/devices/pci0000:00/0000:00:01.0/vendor").c_str(), 0644), 0);
  fs::create_directories(dir_ / "proc");
  ASSERT_EQ(::mkfifo((dir_ / "proc/mounts").c_str(), 0644), 0);
  const auto attr = root.read_attr("/sys/bus/pci/devices/0000:00:01.0/vendor");
  ASSERT_FALSE(attr.ok());
  EXPECT_EQ(
      attr.error().message,
      "/sys/bus/pci/devices/0000:00:01.0/vendor is a FIFO (named pipe), not a file: not read (it could block forever)");
  EXPECT_FALSE(root.read_text("/proc/mounts").ok());
  EXPECT_FALSE(root.read_bytes("/proc/mounts", 16).ok());
}

TEST_F(TempRoot, ResolveRefusesLinksLeavingTheRoot) {
  fs::create_directory_symlink("/usr", dir_ / "sys/escape-abs");
  fs::create_directory_symlink("../../..", dir_ / "sys/bus/escape-rel");
  fs::create_directories(dir_.string() + "-sibling");
  fs::create_directory_symlink("../../" + dir_.filename().string() + "-sibling", dir_ / "sys/escape-prefix");
  SysRoot root(dir_);
  for (const char* p : {"/sys/escape-abs", "/sys/bus/escape-rel", "/sys/escape-prefix"}) {
    SCOPED_TRACE(p);
    const auto r = root.resolve(p);
    ASSERT_FALSE(r.ok()) << *r;
    EXPECT_NE(r.error().message.find("leaves the root"), std::string::npos) << r.error().message;
  }
  fs::remove_all(dir_.string() + "-sibling");
  // A dangling link is an error, not a crash.
  fs::create_directory_symlink("nowhere", dir_ / "sys/dangling");
  EXPECT_FALSE(root.resolve("/sys/dangling").ok());
}

TEST_F(TempRoot, WriteFileAtomicLeavesNoTempFile) {
  SysRoot root(dir_);
  put("etc/default/grub", "GRUB_TIMEOUT=5\n");
  ASSERT_TRUE(root.write_file_atomic("/etc/default/grub", "GRUB_TIMEOUT=1\n").ok());
  EXPECT_EQ(get("etc/default/grub"), "GRUB_TIMEOUT=1\n");
  EXPECT_EQ(names("etc/default"), (std::vector<std::string>{"grub"}));
  EXPECT_EQ(fs::status(dir_ / "etc/default/grub").permissions(), fs::perms(0644));
  EXPECT_EQ(root.write_count(), 1u);
  ASSERT_TRUE(root.write_file_atomic("/etc/default/new", "x", fs::perms(0600)).ok());
  EXPECT_EQ(fs::status(dir_ / "etc/default/new").permissions(), fs::perms(0600));
  EXPECT_EQ(root.write_count(), 2u);
}

TEST_F(TempRoot, FailedAtomicWriteLeavesTheOldFileWhole) {
  SysRoot root(dir_);
  put("etc/default/grub", "GRUB_TIMEOUT=5\n");
  // The target is a non-empty directory: rename fails after the temp file is written.
  fs::create_directories(dir_ / "etc/default/blocker/inside");
  const auto st = root.write_file_atomic("/etc/default/blocker", "new contents");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("cannot rename into"), std::string::npos) << st.error().message;
  EXPECT_EQ(names("etc/default"), (std::vector<std::string>{"blocker", "grub"}));  // no .blocker.XXXXXX
  // A directory that does not exist: nothing is created, the error says where.
  const auto nodir = root.write_file_atomic("/etc/missing/file", "x");
  ASSERT_FALSE(nodir.ok());
  EXPECT_NE(nodir.error().message.find("cannot create a temporary file"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "etc/missing"));
  EXPECT_EQ(get("etc/default/grub"), "GRUB_TIMEOUT=5\n");
  EXPECT_EQ(root.write_count(), 2u);  // attempts are counted too
}

TEST_F(TempRoot, WriteAttrAndBytesAt) {
  SysRoot root(dir_);
  put("sys/devices/pci0000:00/0000:00:01.0/power_control", "auto\n");
  ASSERT_TRUE(root.write_attr("/sys/bus/pci/devices/0000:00:01.0/power_control", "on").ok());
  EXPECT_EQ(get("sys/devices/pci0000:00/0000:00:01.0/power_control"), "on");  // truncated in a fixture
  put("sys/devices/pci0000:00/0000:00:01.0/config", std::string(16, '\0'));
  const std::uint8_t two[2] = {0x34, 0x12};
  ASSERT_TRUE(root.write_bytes_at("/sys/bus/pci/devices/0000:00:01.0/config", 6, two).ok());
  const std::string cfg = get("sys/devices/pci0000:00/0000:00:01.0/config");
  ASSERT_EQ(cfg.size(), 16u);
  EXPECT_EQ(static_cast<unsigned char>(cfg[6]), 0x34);
  EXPECT_EQ(static_cast<unsigned char>(cfg[7]), 0x12);
  EXPECT_EQ(cfg[5], '\0');
  EXPECT_EQ(cfg[8], '\0');
  EXPECT_FALSE(root.write_attr("/sys/nothing/here", "1").ok());
  EXPECT_EQ(root.write_count(), 3u);
}

TEST_F(TempRoot, MoveIsOneCountedRenameInsideTheRoot) {
  SysRoot root(dir_);
  put("etc/default/nvidia.ko", "module");
  ASSERT_TRUE(root.make_dirs("/var/lib/p2pnode/shadowed").ok());
  const auto before = root.write_count();
  ASSERT_TRUE(root.move("/etc/default/nvidia.ko", "/var/lib/p2pnode/shadowed/nvidia.ko").ok());
  EXPECT_EQ(root.write_count(), before + 1);
  EXPECT_FALSE(fs::exists(dir_ / "etc/default/nvidia.ko"));
  EXPECT_EQ(get("var/lib/p2pnode/shadowed/nvidia.ko"), "module");
  const auto gone = root.move("/etc/default/nvidia.ko", "/var/lib/p2pnode/shadowed/again.ko");
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("cannot move /etc/default/nvidia.ko to /var/lib/p2pnode/shadowed/again.ko"),
            std::string::npos)
      << gone.error().message;
  EXPECT_EQ(root.write_count(), before + 2);  // attempts are counted too
}

TEST_F(TempRoot, MakeDirsAndRemove) {
  SysRoot root(dir_);
  ASSERT_TRUE(root.make_dirs("/var/lib/p2pnode/state").ok());
  EXPECT_TRUE(fs::is_directory(dir_ / "var/lib/p2pnode/state"));
  EXPECT_EQ(root.write_count(), 1u);
  ASSERT_TRUE(root.make_dirs("/var/lib/p2pnode/state").ok());
  EXPECT_EQ(root.write_count(), 1u);  // already there: not a write
  put("etc/old", "x");
  ASSERT_TRUE(root.remove_file("/etc/old").ok());
  EXPECT_FALSE(fs::exists(dir_ / "etc/old"));
}

// lstat tells what a path itself is, a link never followed, and never opens it.
TEST_F(TempRoot, LstatSaysWhatThePathItselfIs) {
  SysRoot root(dir_);
  put("etc/f", "abc");
  ASSERT_EQ(::mkfifo((dir_ / "etc/fifo").c_str(), 0600), 0);
  fs::create_symlink("fifo", dir_ / "etc/to-fifo");
  using p2pnode::sys::FileType;
  EXPECT_EQ(root.lstat("/etc/f")->type, FileType::regular);
  EXPECT_EQ(root.lstat("/etc/f")->size, 3u);
  EXPECT_EQ(root.lstat("/etc")->type, FileType::directory);
  EXPECT_EQ(root.lstat("/etc/fifo")->type, FileType::fifo);
  EXPECT_EQ(root.lstat("/etc/to-fifo")->type, FileType::symlink);
  EXPECT_EQ(root.lstat("/sys/bus/pci/devices/0000:00:01.0")->type, FileType::symlink);
  EXPECT_EQ(root.lstat("/etc/nothing")->type, FileType::missing);
  EXPECT_EQ(root.lstat("/etc/f/below")->type, FileType::missing);  // ENOTDIR
  EXPECT_EQ(p2pnode::sys::describe(FileType::character_device), "a character device");
  EXPECT_EQ(root.write_count(), 0u);
}

TEST(SysRootJoin, JoinsPieces) {
  EXPECT_EQ(join("/sys/bus/pci/devices", "0000:01:00.0", "driver"), "/sys/bus/pci/devices/0000:01:00.0/driver");
  EXPECT_EQ(join("/sys/", "/class"), "/sys/class");
}
