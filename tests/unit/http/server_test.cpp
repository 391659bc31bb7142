#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "http/server.hpp"
#include "unit/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace p2pnode::http;

TEST(Token, ConstantTimeEquality) {
  EXPECT_TRUE(token_equal("abcdefghijklmnop", "abcdefghijklmnop"));
  EXPECT_FALSE(token_equal("abcdefghijklmnop", "abcdefghijklmnoq"));
  EXPECT_FALSE(token_equal("abcdefghijklmnop", "abcdefghijklmno"));
  EXPECT_FALSE(token_equal("", "a"));
  EXPECT_TRUE(token_equal("", ""));
  EXPECT_FALSE(token_equal(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(Token, FileMustBeRootOnly) {
  const p2pnode::test::TempDir scratch("token");
  const fs::path f = scratch / "token";
  std::ofstream(f) << "0123456789abcdef0123\n";
  fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write);
  auto ok = read_token_file(f);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "0123456789abcdef0123");
  fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  auto open = read_token_file(f);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("readable by group or others"), std::string::npos);
  fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write);
  std::ofstream(f) << "short\n";
  EXPECT_FALSE(read_token_file(f).ok());
  EXPECT_FALSE(read_token_file(f).ok());
}
