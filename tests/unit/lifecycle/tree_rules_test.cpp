// The one rule for a source tree (lifecycle/tree_rules.hpp): links judged by where they lead once
// every link on the way is followed, special files refused, the folders p2pnode writes real ones,
// and an archive's special members read from tar's listing before anything is unpacked.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "lifecycle/tree_rules.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::lifecycle {
namespace {
namespace fs = std::filesystem;

// A tree's links as a map (rel -> text): the pure resolver's input.
Result<LinkEnd> resolve_among(const std::map<std::string, std::string>& links, const std::string& link) {
  return resolve_in_tree(link, [&](const std::string& rel) -> std::optional<std::string> {
    const auto it = links.find(rel);
    return it == links.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

TEST(TreeRules, LinksResolveThroughEveryLinkOnTheWay) {
  const std::map<std::string, std::string> links = {{"a/b/p", ".."},        {"a/b/q1", "p/../.."},
                                                    {"a/up", "../c.c"},     {"top", "."},
                                                    {"chain1", "chain2"},   {"chain2", "a/b/p"},
                                                    {"abs", "/etc/shadow"}, {"via-abs", "abs/x"},
                                                    {"self", "self"},       {"deep", "a/b/p/b/p/b/p/../../.."}};
  EXPECT_EQ(resolve_among(links, "a/b/p")->member, "a");
  EXPECT_EQ(resolve_among(links, "a/up")->member, "c.c");
  EXPECT_EQ(resolve_among(links, "top")->member, "");  // the tree itself: inside
  const auto chain = resolve_among(links, "chain1");
  ASSERT_TRUE(chain) << chain.error().message;
  EXPECT_EQ(chain->member, "a");
  EXPECT_EQ(chain->followed, (std::vector<std::string>{"./chain2 -> a/b/p", "./a/b/p -> .."}));

  const auto q1 = resolve_among(links, "a/b/q1");  // "a" by its text, the tree's parent once followed
  ASSERT_FALSE(q1);
  EXPECT_EQ(q1.error().message, "outside the tree once ./a/b/p -> .. is followed");
  EXPECT_EQ(resolve_among(links, "abs").error().message, "outside the tree (an absolute path)");
  EXPECT_EQ(resolve_among(links, "via-abs").error().message,
            "outside the tree once ./abs -> /etc/shadow is followed (an absolute path)");
  EXPECT_FALSE(resolve_among(links, "deep"));
  EXPECT_NE(resolve_among(links, "self").error().message.find("too many levels of symbolic links"), std::string::npos);
  // A member that does not exist: the rest of the path as written (inside here, outside there).
  EXPECT_EQ(resolve_among({{"d", "missing/x"}}, "d")->member, "missing/x");
  EXPECT_FALSE(resolve_among({{"d", "missing/../.."}}, "d"));
}

struct TreeBox {
  p2pnode::test::TempDir tmp{"tree-rules"};
  fs::path dir = tmp.path();
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel, std::ios::binary) << text;
  }
};

TEST(TreeRules, WalkListsFilesFoldersAndLinksAndLeavesTheTopGitOut) {
  TreeBox b;
  b.write("t/Makefile", "obj-m += a.o\n");
  b.write("t/sub/a.c", "int a;\n");
  b.write("t/.git/HEAD", "ref: x\n");
  b.write("t/sub/.git", "gitdir: x\n");  // only the top .git is git's own
  fs::create_symlink("../Makefile", b.dir / "t/sub/mk");
  const sys::SysRoot root(b.dir);
  const auto m = walk_tree(root, "/t");
  ASSERT_TRUE(m) << m.error().message;
  std::vector<std::string> seen;
  for (const auto& e : *m) { seen.push_back(e.path + (e.kind == TreeMember::Kind::link ? " -> " + e.target : "")); }
  EXPECT_EQ(seen,
            (std::vector<std::string>{"./Makefile", "./sub", "./sub/.git", "./sub/a.c", "./sub/mk -> ../Makefile"}));
}

TEST(TreeRules, SpecialFilesAndLinkedFoldersAreRefused) {
  TreeBox b;
  b.write("t/Makefile", "x\n");
  const sys::SysRoot root(b.dir);
  ASSERT_EQ(::mkfifo((b.dir / "t/pipe").c_str(), 0600), 0);
  auto fifo = walk_tree(root, "/t");
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().message, "./pipe is a FIFO: a tree holds only files, directories and symbolic links");
  fs::remove(b.dir / "t/pipe");
  if (::geteuid() == 0) {
    ASSERT_EQ(::mknod((b.dir / "t/sda").c_str(), S_IFBLK | 0600, makedev(8, 0)), 0);
    EXPECT_EQ(walk_tree(root, "/t").error().message,
              "./sda is a block device: a tree holds only files, directories and symbolic links");
    fs::remove(b.dir / "t/sda");
  }
  // The tree itself a link to a folder: the staging folder would be the link.
  fs::create_directories(b.dir / "elsewhere");
  fs::create_symlink(b.dir / "elsewhere", b.dir / "linked");
  const auto linked = walk_tree(root, "/linked");
  ASSERT_FALSE(linked);
  EXPECT_NE(linked.error().message.find("the tree /linked is a symbolic link (to " + (b.dir / "elsewhere").string() +
                                        "), not a folder"),
            std::string::npos)
      << linked.error().message;
  EXPECT_TRUE(expect_real_dir(root, "/t", "the staging folder"));
  EXPECT_FALSE(expect_real_dir(root, "/t/Makefile", "the staging folder"));
}

// GNU tar 1.34's `tar --numeric-owner --quoting-style=escape -tvf` of a tarball with each type.
TEST(TreeRules, SpecialMembersFromTarsListing) {
  const std::string ok =
      "drwxr-xr-x 0/0               0 2026-01-01 00:00 p2ptest-1.5/\n"
      "-rw-r--r-- 0/0              19 2026-01-01 00:00 p2ptest-1.5/Makefile\n"
      "lrwxrwxrwx 0/0               0 2026-01-01 00:00 p2ptest-1.5/mk -> Makefile\n"
      "hrw-r--r-- 0/0               0 2026-01-01 00:00 p2ptest-1.5/hard link to p2ptest-1.5/Makefile\n";
  EXPECT_FALSE(special_archive_member(ok));
  EXPECT_EQ(special_archive_member(ok + "crw-rw-rw- 0/0             8,0 2026-01-01 00:00 p2ptest-1.5/sda\n"),
            "p2ptest-1.5/sda is a character device");
  EXPECT_EQ(special_archive_member("brw-rw-rw- 0/0             7,0 2026-01-01 00:00 a dir/loop 0\n"),
            "a dir/loop 0 is a block device");
  EXPECT_EQ(special_archive_member("prw-r--r-- 0/0               0 2026-01-01 00:00 x/pipe\\nname\n"),
            "x/pipe\\nname is a FIFO");
  EXPECT_EQ(special_archive_member("?rw-r--r-- 0/0 0 2026-01-01 00:00 odd\n"), "odd is a member of tar's type '?'");
}

// The listing the decoder reads is tar's own: a real archive with a FIFO, listed by the argv apply uses.
TEST(TreeRules, TarsOwnListingOfAFifoIsSeen) {
  TreeBox b;
  b.write("src/p/Makefile", "x\n");
  ASSERT_EQ(::mkfifo((b.dir / "src/p/pipe").c_str(), 0600), 0);
  const std::string tar = (b.dir / "x.tar").string();
  ASSERT_EQ(std::system(("tar -cf " + tar + " -C " + (b.dir / "src").string() + " p").c_str()), 0);
  const std::string list = (b.dir / "list").string();
  ASSERT_EQ(std::system(("tar --numeric-owner --quoting-style=escape -tvf " + tar + " > " + list).c_str()), 0);
  std::ifstream in(list);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(special_archive_member(text), "p/pipe is a FIFO") << text;
}

}  // namespace
}  // namespace p2pnode::lifecycle
