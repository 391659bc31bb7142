// Secrets are checked on the descriptor that reads them (sys/private_file.hpp).
#include "sys/private_file.hpp"
#include "unit/temp_dir.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace p2pnode::sys {
namespace {
namespace fs = std::filesystem;

struct Dir {
  p2pnode::test::TempDir tmp{"private"};
  fs::path p = tmp.path();
  fs::path write(const std::string& name, const std::string& text, fs::perms mode) const {
    std::ofstream(p / name) << text;
    fs::permissions(p / name, mode);
    return p / name;
  }
};

TEST(PrivateFile, OwnerOnlyIsRead) {
  Dir d;
  const auto f = d.write("token", "0123456789abcdef\n", fs::perms::owner_read | fs::perms::owner_write);
  auto r = read_private_file(f, "token file");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "0123456789abcdef\n");
  EXPECT_TRUE(check_owner_only(f, "token file"));
}

TEST(PrivateFile, GroupOrOthersBitsAreRefused) {
  Dir d;
  const auto f = d.write("key", "k", fs::perms::owner_read | fs::perms::group_read);
  auto r = read_private_file(f, "TLS key file");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("readable by group or others (mode 440)"), std::string::npos) << r.error().message;
}

// A link to a good file is refused: the link could be re-pointed between a check and a use.
TEST(PrivateFile, ALinkIsRefused) {
  Dir d;
  const auto f = d.write("real", "secret", fs::perms::owner_read);
  fs::create_symlink(f, d.p / "link");
  auto r = read_private_file(d.p / "link", "token file");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is a symbolic link"), std::string::npos) << r.error().message;
}

TEST(PrivateFile, NotARegularFileOrMissingOrTooLarge) {
  Dir d;
  EXPECT_FALSE(read_private_file(d.p, "token file"));
  EXPECT_FALSE(read_private_file(d.p / "missing", "token file"));
  const auto f = d.write("big", std::string(5000, 'x'), fs::perms::owner_read);
  auto r = read_private_file(f, "token file", 4096);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("larger than 4096 bytes"), std::string::npos);
}

// Owned by another user (not root, not us): refused. Needs root to chown; skipped otherwise.
TEST(PrivateFile, SomeoneElsesFileIsRefused) {
  if (::geteuid() != 0) { GTEST_SKIP() << "chown to another user needs root"; }
  Dir d;
  const auto f = d.write("token", "0123456789abcdef", fs::perms::owner_read);
  ASSERT_EQ(::chown(f.c_str(), 65534, 65534), 0);
  auto r = read_private_file(f, "token file");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is owned by uid 65534"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace p2pnode::sys
