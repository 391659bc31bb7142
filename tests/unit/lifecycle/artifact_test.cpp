#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "lifecycle/artifact.hpp"
#include "nvidia/sha256.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::lifecycle {
using nvidia::sha256_hex;
namespace {
namespace fs = std::filesystem;

struct TempRoot {
  p2pnode::test::TempDir tmp{"artifact"};
  fs::path dir = tmp.path();
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel, std::ios::binary) << text;
  }
};

TEST(Artifact, FileSha256CheckedAndMismatchRefused) {
  TempRoot t;
  t.write("art/x.run", "#!/bin/sh\necho hi\n");
  sys::SysRoot root(t.dir);
  sys::ScriptedRunner runner;
  Artifact a;
  a.path = "/art/x.run";
  a.sha256 = sha256_hex("#!/bin/sh\necho hi\n");
  auto f = fetch_artifact(root, runner, a, "installer", [](std::string_view) {});
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_FALSE(f->is_dir);
  EXPECT_FALSE(f->fetched);
  a.sha256[0] = a.sha256[0] == '0' ? '1' : '0';
  auto bad = fetch_artifact(root, runner, a, "installer", [](std::string_view) {});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("sha256 mismatch"), std::string::npos);
  EXPECT_TRUE(runner.calls().empty());
}

TEST(Artifact, TreeListingMatchesTheShellRecipe) {
  TempRoot t;
  t.write("src/b.c", "b\n");
  t.write("src/a/Makefile", "obj-m += a.o\n");
  t.write("src/.git/HEAD", "ref: x\n");  // left out
  sys::SysRoot root(t.dir);
  auto l = tree_listing(root, "/src");
  ASSERT_TRUE(l);
  EXPECT_EQ(*l, sha256_hex("obj-m += a.o\n") + "  ./a/Makefile\n" + sha256_hex("b\n") + "  ./b.c\n");
  // The same recipe the README gives operators.
  const std::string cmd = "cd " + (t.dir / "src").string() +
                          " && find . -type f ! -path './.git/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum"
                          " | sha256sum | cut -d' ' -f1 > " +
                          (t.dir / "want").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(t.dir / "want");
  std::string want;
  in >> want;
  EXPECT_EQ(*sha256_tree(root, "/src"), want);
}

// A link inside the tree is covered by the digest (its target's text), so re-pointing it changes the
// digest; a link out of the tree refuses the tree, as does anything that is not a file or directory.
TEST(Artifact, TreeDigestCoversLinksAndRefusesLinksOut) {
  TempRoot t;
  t.write("src/b.c", "b\n");
  t.write("src/c.c", "c\n");
  t.write("src/sub/d.h", "d\n");
  fs::create_symlink("b.c", t.dir / "src/link.c");
  fs::create_symlink("../b.c", t.dir / "src/sub/up.c");
  sys::SysRoot root(t.dir);
  auto l = tree_listing(root, "/src");
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(*l, sha256_hex("b\n") + "  ./b.c\n" + sha256_hex("c\n") + "  ./c.c\n" + sha256_hex("b.c") + "  ./link.c\n" +
                    sha256_hex("d\n") + "  ./sub/d.h\n" + sha256_hex("../b.c") + "  ./sub/up.c\n");
  const auto before = *sha256_tree(root, "/src");
  fs::remove(t.dir / "src/link.c");
  fs::create_symlink("c.c", t.dir / "src/link.c");
  EXPECT_NE(*sha256_tree(root, "/src"), before);

  for (const std::string target : {"/etc/shadow", "../../etc/shadow", "sub/../../x"}) {
    SCOPED_TRACE(target);
    fs::remove(t.dir / "src/link.c");
    fs::create_symlink(target, t.dir / "src/link.c");
    auto out = sha256_tree(root, "/src");
    ASSERT_FALSE(out);
    EXPECT_NE(out.error().message.find("./link.c points to " + target + ", outside the tree"), std::string::npos)
        << out.error().message;
  }
}

// A link is judged where it leads once every link on the way is followed, not by its text: with
// a/b/p -> .. (a/b/p is a), a/b/q1 -> p/../.. reads as a but is the tree's parent.
TEST(Artifact, TreeLinksAreJudgedByWhereTheyLead) {
  TempRoot t;
  t.write("src/Makefile", "obj-m += a.o\n");
  fs::create_directories(t.dir / "src/a/b");
  fs::create_symlink("..", t.dir / "src/a/b/p");
  sys::SysRoot root(t.dir);
  ASSERT_TRUE(sha256_tree(root, "/src")) << "a/b/p is a/, inside";
  for (const auto& [link, target] : {std::pair<std::string, std::string>{"a/b/q1", "p/../.."},
                                     {"l2", "a/b/p/../.."},
                                     {"a/l3", "b/p/b/p/../../.."}}) {
    SCOPED_TRACE(link);
    fs::create_symlink(target, t.dir / "src" / link);
    auto out = sha256_tree(root, "/src");
    ASSERT_FALSE(out);
    EXPECT_NE(out.error().message.find("./" + link + " points to " + target + ", outside the tree"), std::string::npos)
        << out.error().message;
    fs::remove(t.dir / "src" / link);
  }
  // A loop of links is refused too (it leads nowhere the digest covers).
  fs::create_symlink("loop2", t.dir / "src/loop1");
  fs::create_symlink("loop1", t.dir / "src/loop2");
  auto loop = sha256_tree(root, "/src");
  ASSERT_FALSE(loop);
  EXPECT_NE(loop.error().message.find("too many levels of symbolic links"), std::string::npos) << loop.error().message;
}

// A path: artifact is copied into p2pnode's own directory and hashed there; what apply uses is the
// copy, so swapping the original after the check changes nothing.
TEST(Artifact, PathArtifactIsCopiedAndTheCopyIsWhatIsUsed) {
  TempRoot t;
  t.write("srv/x.run", "good\n");
  sys::SysRoot root(t.dir);
  sys::ScriptedRunner runner;
  Artifact a;
  a.path = "/srv/x.run";
  a.sha256 = sha256_hex("good\n");
  auto f = fetch_artifact(root, runner, a, "installer", [](std::string_view) {});
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->path, std::string(kArtifactDir) + "/local/" + a.sha256.substr(0, 16) + "-x.run");
  t.write("srv/x.run", "evil\n");  // swapped after the check
  EXPECT_EQ(*root.read_text(f->path), "good\n");
  EXPECT_EQ(*sha256_file(root, f->path), a.sha256);
  // Fetched again, the swapped original is refused and the good copy is left as it was.
  auto again = fetch_artifact(root, runner, a, "installer", [](std::string_view) {});
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("sha256 mismatch"), std::string::npos);
  EXPECT_FALSE(root.exists(f->path + ".part"));

  // A tree the same way.
  t.write("srv/tree/Makefile", "obj-m += a.o\n");
  Artifact d;
  d.path = "/srv/tree";
  d.sha256 = *sha256_tree(root, "/srv/tree");
  auto fd = fetch_artifact(root, runner, d, "source", [](std::string_view) {});
  ASSERT_TRUE(fd) << fd.error().message;
  EXPECT_TRUE(fd->is_dir);
  EXPECT_EQ(fd->path, std::string(kArtifactDir) + "/local/" + d.sha256.substr(0, 16) + "-tree");
  t.write("srv/tree/Makefile", "obj-m += evil.o\n");
  EXPECT_EQ(*root.read_text(fd->path + "/Makefile"), "obj-m += a.o\n");
}

// A path: artifact is a regular file or a directory, judged by lstat before anything opens it:
// `installer.path: /dev/zero` was hashed forever, a FIFO blocked the open, and opening some devices
// acts (a watchdog starts counting). A file is at most 8 GiB (curl's --max-filesize for a download).
TEST(Artifact, PathArtifactIsARegularFileOrADirectory) {
  TempRoot t;
  t.write("srv/keep", "x");
  sys::SysRoot root(t.dir);
  sys::ScriptedRunner runner;
  Artifact a;
  a.sha256 = sha256_hex("x");
  auto refused = [&](const std::string& path) {
    a.path = path;
    auto f = fetch_artifact(root, runner, a, "userspace.installer", [](std::string_view) {});
    return f ? std::string("accepted") : f.error().message;
  };
  // A socket first: unfixed, a FIFO would block this test's open for ever.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const std::string sock = (t.dir / "srv/sock").string();
  ASSERT_LT(sock.size(), sizeof sa.sun_path);
  std::copy(sock.begin(), sock.end(), sa.sun_path);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  const std::string sock_msg = refused("/srv/sock");
  ::close(fd);
  ASSERT_NE(sock_msg.find(
                "userspace.installer: /srv/sock is a socket: a path: artifact must be a regular file or a directory"),
            std::string::npos)
      << sock_msg;

  ASSERT_EQ(::mkfifo((t.dir / "srv/fifo").c_str(), 0600), 0);
  EXPECT_NE(refused("/srv/fifo").find("/srv/fifo is a FIFO"), std::string::npos) << refused("/srv/fifo");
  // A link is followed inside the root and its target judged the same way.
  fs::create_symlink("fifo", t.dir / "srv/to-fifo");
  EXPECT_NE(refused("/srv/to-fifo").find("is a FIFO"), std::string::npos) << refused("/srv/to-fifo");
  if (::geteuid() == 0) {  // /dev/zero's own numbers
    ASSERT_EQ(::mknod((t.dir / "srv/zero").c_str(), S_IFCHR | 0666, makedev(1, 5)), 0);
    EXPECT_NE(refused("/srv/zero").find("/srv/zero is a character device"), std::string::npos) << refused("/srv/zero");
  }
  {  // 8 GiB and one byte, sparse: refused by its size, unread.
    std::ofstream big(t.dir / "srv/big.run");
  }
  fs::resize_file(t.dir / "srv/big.run", (8ULL << 30) + 1);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(refused("/srv/big.run").find("/srv/big.run is 8589934593 bytes; a file artifact is at most 8 GiB"),
            std::string::npos)
      << refused("/srv/big.run");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(runner.calls().empty());
  EXPECT_FALSE(root.exists(std::string(kArtifactDir) + "/local"));
  EXPECT_EQ(refused("/srv/keep"), "accepted");
}

TEST(Artifact, DownloadUsesCurlWithResumeAndChecksTheDigest) {
  TempRoot t;
  sys::SysRoot root(t.dir);
  sys::ScriptedRunner runner;
  const std::string body = "installer bytes";
  runner.on({"curl"}, [&](const sys::Command& c) {
    // Write what a download would have written to the --output file.
    auto it = std::find(c.argv.begin(), c.argv.end(), "--output");
    std::ofstream(*(it + 1), std::ios::binary | std::ios::app) << body;
    return sys::exited_with(0, "downloaded 15 bytes in 0.1 s\n");
  });
  Artifact a;
  a.url = "https://example.invalid/NVIDIA-Linux-x86_64-550.90.07.run?x=1";
  a.sha256 = sha256_hex(body);
  std::vector<std::string> lines;
  auto f = fetch_artifact(root, runner, a, "installer", [&](std::string_view l) { lines.emplace_back(l); });
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->path, "/var/lib/p2pnode/artifacts/NVIDIA-Linux-x86_64-550.90.07.run");
  EXPECT_TRUE(f->fetched);
  ASSERT_EQ(runner.calls().size(), 1u);
  const auto& argv = runner.calls()[0];
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--continue-at"), argv.end());
  EXPECT_NE(lines.front().find("downloading"), std::string::npos);
  // Present and matching: no second download.
  auto again = fetch_artifact(root, runner, a, "installer", [](std::string_view) {});
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->fetched);
  EXPECT_EQ(runner.calls().size(), 1u);
}

TEST(Artifact, DownloadWithWrongDigestIsRefusedAndDropped) {
  TempRoot t;
  sys::SysRoot root(t.dir);
  sys::ScriptedRunner runner;
  runner.on({"curl"}, [&](const sys::Command& c) {
    auto it = std::find(c.argv.begin(), c.argv.end(), "--output");
    std::ofstream(*(it + 1)) << "tampered";
    return sys::exited_with(0);
  });
  Artifact a;
  a.url = "https://example.invalid/x.run";
  a.sha256 = sha256_hex("original");
  auto f = fetch_artifact(root, runner, a, "installer", [](std::string_view) {});
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("sha256 mismatch"), std::string::npos);
  EXPECT_FALSE(root.exists("/var/lib/p2pnode/artifacts/x.run"));
  EXPECT_FALSE(root.exists("/var/lib/p2pnode/artifacts/x.run.part"));
}

// curl's argv: http(s) only (redirects too), a size cap, the URL after --; a .part the server cannot
// resume (curl 33: no ranges) is dropped so the next apply starts over; a signed URL's query never
// reaches a message.
TEST(Artifact, DownloadArgvAndAnUnresumablePart) {
  TempRoot t;
  sys::SysRoot root(t.dir);
  sys::ScriptedRunner runner;
  runner.on({"curl"}, [&](const sys::Command& c) {
    auto it = std::find(c.argv.begin(), c.argv.end(), "--output");
    std::ofstream(*(it + 1), std::ios::app) << "half";
    return sys::exited_with(33, "", "curl: (33) HTTP server doesn't seem to support byte ranges. Cannot resume.\n");
  });
  Artifact a;
  a.url = "https://example.invalid/x.run?X-Amz-Signature=secret";
  a.sha256 = sha256_hex("original");
  std::vector<std::string> lines;
  auto f = fetch_artifact(root, runner, a, "installer", [&](std::string_view l) { lines.emplace_back(l); });
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("removed, the next apply downloads it whole"), std::string::npos)
      << f.error().message;
  EXPECT_EQ(f.error().message.find("secret"), std::string::npos) << f.error().message;
  for (const auto& l : lines) { EXPECT_EQ(l.find("secret"), std::string::npos) << l; }
  EXPECT_FALSE(root.exists("/var/lib/p2pnode/artifacts/x.run.part"));
  const auto& argv = runner.calls().at(0);
  const auto dashdash = std::find(argv.begin(), argv.end(), "--");
  ASSERT_NE(dashdash, argv.end());
  EXPECT_EQ(*(dashdash + 1), *a.url);
  for (const char* opt : {"--proto", "--proto-redir", "--max-filesize"}) {
    EXPECT_NE(std::find(argv.begin(), dashdash, opt), dashdash) << opt;
  }
}

TEST(Artifact, Basenames) {
  Artifact a;
  a.git = "https://github.com/tinygrad/open-gpu-kernel-modules.git";
  EXPECT_EQ(artifact_basename(a), "open-gpu-kernel-modules");
  Artifact b;
  b.path = "/srv/0001-fix.patch";
  EXPECT_EQ(artifact_basename(b), "0001-fix.patch");
}

}  // namespace
}  // namespace p2pnode::lifecycle

namespace p2pnode::lifecycle {
namespace {

// A git source pinned by its tree sha256: cloned with --depth 1 --branch, .git left out of the digest.
TEST(Artifact, GitCheckoutOfABranch) {
  if (std::system("git --version >/dev/null 2>&1") != 0) {
    GTEST_FAIL() << "git is not installed (scripts/install-deps.sh test installs it)";
  }
  TempRoot t;
  t.write("repo/Makefile", "obj-m += a.o\n");
  t.write("repo/a.c", "int a;\n");
  const std::string repo = (t.dir / "repo").string();
  const std::string setup = "cd " + repo +
                            " && git init -q -b main && git add -A && "
                            "git -c user.email=t@t -c user.name=t commit -q -m init && git branch -q 550.90.07-p2p";
  ASSERT_EQ(std::system(setup.c_str()), 0);
  sys::SysRoot root(t.dir / "box");
  std::filesystem::create_directories(t.dir / "box");
  sys::ProcessRunner runner;
  Artifact a;
  a.git = "file://" + repo;
  a.branch = "550.90.07-p2p";
  a.sha256 = sha256_hex(sha256_hex("obj-m += a.o\n") + "  ./Makefile\n" + sha256_hex("int a;\n") + "  ./a.c\n");
  auto f = fetch_artifact(root, runner, a, "source", [](std::string_view) {});
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->is_dir);
  EXPECT_TRUE(f->fetched);
  EXPECT_TRUE(root.exists(f->path + "/.git"));
  auto again = fetch_artifact(root, runner, a, "source", [](std::string_view) {});
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->fetched);  // present and matching: no second clone
  a.sha256 = std::string(64, 'f');
  auto bad = fetch_artifact(root, runner, a, "source", [](std::string_view) {});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("sha256 mismatch"), std::string::npos);
}

}  // namespace
}  // namespace p2pnode::lifecycle

namespace p2pnode::lifecycle {

// curl --progress-bar as recorded (tests/fixtures/_recorded/curl/README.md): redraws split on \r.
TEST(CurlProgress, RecordedBarGivesEachPercentage) {
  std::ifstream in(std::string(P2PNODE_SOURCE_DIR) + "/tests/fixtures/_recorded/curl/progress-bar-30MB.stderr",
                   std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<double> got;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find_first_of("\r\n", start);
    if (end == std::string::npos) { end = text.size(); }
    if (auto p = curl_progress_percent(std::string_view(text).substr(start, end - start))) { got.push_back(*p); }
    start = end + 1;
  }
  EXPECT_EQ(got, (std::vector<double>{34.1, 68.6, 100.0}));
}

TEST(CurlProgress, OtherLinesAreNotProgress) {
  for (const char* l : {"", "%", "downloaded 15 bytes in 0.1 s (150 B/s)",
                        "curl: (22) The requested URL returned error: 404", "abc 12.5%", "##### 150.0%", "##### x%"}) {
    EXPECT_FALSE(curl_progress_percent(l)) << l;
  }
  EXPECT_EQ(curl_progress_percent("#=O  0.0%"), 0.0);
}

TEST(CurlProgress, ErrorLinesAmongRedraws) {
  EXPECT_EQ(curl_error_lines(
                "\r####   12.0%\r#######   20.0%\ncurl: (18) transfer closed with 100 bytes remaining to read\n"),
            "curl: (18) transfer closed with 100 bytes remaining to read");
  EXPECT_EQ(curl_error_lines("\r####   12.0%"), "");
}

}  // namespace p2pnode::lifecycle
