// gdrcopy.library: libgdrapi built from the profile's gdrcopy source into p2pnode's state, with
// the source it came from recorded beside it; rebuilt when that source changes; and the self-test
// agent told where it is. The build is real (make and cc) over a small source laid out as
// gdrcopy's release is (a top Makefile whose `lib` leaves src/libgdrapi.so.2.<minor>).
#include "gdrcopy/library.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "actions/action.hpp"
#include "engine/selftest.hpp"
#include "lifecycle/artifact.hpp"
#include "profile/loader.hpp"
#include "unit/temp_dir.hpp"

using namespace p2pnode;
namespace fs = std::filesystem;

namespace {
struct GdrBox {
  p2pnode::test::TempDir tmp{"gdrlib"};
  fs::path dir = tmp.path();
  sys::ProcessRunner runner;
  GdrBox() { source("6"); }
  void put(const std::string& rel, const std::string& text) {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel, std::ios::binary) << text;
  }
  // gdrcopy's layout in /srv/gdr: `make lib` builds src/libgdrapi.so.2.<minor> (soname libgdrapi.so.2).
  void source(const std::string& minor, const std::string& extra = "") {
    put("srv/gdr/Makefile", "lib:\n\tcd src && cc -shared -fPIC -Wl,-soname,libgdrapi.so.2 -o libgdrapi.so.2." + minor +
                                " gdrapi.c\n\tcd src && ln -sf libgdrapi.so.2." + minor + " libgdrapi.so.2\n");
    put("srv/gdr/src/gdrapi.c",
        "void gdr_runtime_get_version(int* a, int* b) { *a = 2; *b = " + minor + "; }\n" + extra);
  }
  Profile profile() {
    sys::SysRoot root(dir);
    const auto sha = lifecycle::sha256_tree(root, "/srv/gdr");
    EXPECT_TRUE(sha.ok());
    const std::string text =
        "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata:\n  name: gdr\n"
        "driver:\n  version: 550.90.07\n  kernel_module:\n    source:\n      path: /srv/ogkm.tar.xz\n"
        "      sha256: 3c56fc1a3f0ee3de9a9e4bb20b3f5c33c224be266906c5e879d80eb3ec71086f\n"
        "gdrcopy:\n  version: \"2.6\"\n  source:\n    path: /srv/gdr\n    sha256: " +
        sha.value() + "\n";
    auto r = profile::load_profile_text(text, "gdr.yaml");
    EXPECT_TRUE(r.profile && r.profile->gdrcopy) << r.diagnostics.format();
    return r.profile.value_or(Profile{});
  }
  std::vector<StepResult> apply(const Profile& p) {
    sys::SysRoot root(dir);
    actions::ApplyContext ctx{root, runner, p};
    ctx.only = {"gdrcopy.library"};
    return actions::apply_all(ctx);
  }
  std::vector<Step> plan(const Profile& p) {
    sys::SysRoot root(dir);
    std::vector<Step> out;
    for (auto& s : actions::plan_all(p, Inventory{}, root).steps) {
      if (s.action == "gdrcopy.library") { out.push_back(s); }
    }
    return out;
  }
};
bool tools() { return std::system("command -v make >/dev/null && command -v cc >/dev/null") == 0; }
}  // namespace

TEST(GdrapiLibrary, WhatIsNeeded) {
  GdrcopySpec g;
  g.version = "2.6";
  g.source.sha256 = "aa";
  EXPECT_EQ(gdrcopy::library_path(g), "/var/lib/p2pnode/gdrcopy/2.6/libgdrapi.so.2");
  EXPECT_EQ(gdrcopy::library_work(g, false, std::nullopt), "libgdrapi 2.6 is not built yet");
  EXPECT_EQ(gdrcopy::library_work(g, true, std::nullopt),
            "/var/lib/p2pnode/gdrcopy/2.6/libgdrapi.so.2 has no record of its source "
            "(/var/lib/p2pnode/gdrcopy/2.6/source.sha256)");
  EXPECT_EQ(gdrcopy::library_work(g, true, "bb\n"), "built from another source (sha256 bb, the profile's is aa)");
  EXPECT_EQ(gdrcopy::library_work(g, true, "aa\n"), std::nullopt);
}

TEST(GdrapiLibrary, BuiltFromTheProfilesSourceOnceAndAgainWhenItChanges) {
  if (!tools()) { GTEST_FAIL() << "make or cc is not installed (scripts/install-deps.sh build installs them)"; }
  GdrBox b;
  Profile p = b.profile();
  ASSERT_EQ(b.plan(p).size(), 1u);
  EXPECT_EQ(b.plan(p)[0].details["why"], "libgdrapi 2.6 is not built yet");
  auto r = b.apply(p);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  EXPECT_NE(r[0].message.find("(libgdrapi.so.2.6) and placed as /var/lib/p2pnode/gdrcopy/2.6/libgdrapi.so.2"),
            std::string::npos)
      << r[0].message;
  const fs::path lib = b.dir / "var/lib/p2pnode/gdrcopy/2.6/libgdrapi.so.2";
  ASSERT_TRUE(fs::is_regular_file(lib));
  EXPECT_FALSE(fs::is_symlink(lib));
  EXPECT_EQ((fs::status(lib).permissions() & fs::perms::owner_exec), fs::perms::owner_exec);
  std::ifstream in(lib, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  EXPECT_EQ(std::string(magic, 4),
            "\x7f"
            "ELF");
  EXPECT_FALSE(fs::exists(b.dir / "var/lib/p2pnode/gdrcopy/build")) << "the scratch build is removed";
  // Nothing to do the second time.
  EXPECT_TRUE(b.plan(p).empty());
  r = b.apply(p);
  EXPECT_TRUE(r.empty() || r[0].outcome == StepOutcome::unchanged);
  // The agent is pointed at it.
  p.selftest = SelftestSpec{};
  p.selftest->cases = {"bar_copy", "integrity"};
  sys::SysRoot root(b.dir);
  EXPECT_EQ(engine::selftest_agent_args({"--mode", "rounds"}, p, root),
            (std::vector<std::string>{"--mode", "rounds", "--gdrapi", lib.string(), "--cases", "bar_copy,integrity"}));
  // A new source (its sha256 in the profile): built again.
  b.source("7");
  p = b.profile();
  ASSERT_EQ(b.plan(p).size(), 1u);
  EXPECT_NE(b.plan(p)[0].details["why"].get<std::string>().find("built from another source"), std::string::npos);
  r = b.apply(p);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::changed) << r[0].message;
  EXPECT_NE(r[0].message.find("libgdrapi.so.2.7"), std::string::npos) << r[0].message;
}

TEST(GdrapiLibrary, AFailedBuildSaysWhyAndLeavesTheOldLibrary) {
  if (!tools()) { GTEST_FAIL() << "make or cc is not installed (scripts/install-deps.sh build installs them)"; }
  GdrBox b;
  Profile p = b.profile();
  ASSERT_EQ(b.apply(p).at(0).outcome, StepOutcome::changed);
  b.source("6", "this is not C;\n");
  p = b.profile();
  auto r = b.apply(p);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, StepOutcome::failed);
  EXPECT_NE(r[0].message.find("make lib exit 2"), std::string::npos) << r[0].message;
  EXPECT_NE(r[0].message.find("gdrapi.c"), std::string::npos) << r[0].message;  // the compiler's words
  EXPECT_TRUE(fs::is_regular_file(b.dir / "var/lib/p2pnode/gdrcopy/2.6/libgdrapi.so.2")) << "the working one stays";
  sys::SysRoot root(b.dir);
  EXPECT_EQ(engine::selftest_agent_args({}, p, root).size(), 2u);  // still offered: the last good build
}

TEST(GdrapiLibrary, NoLibraryNoArgument) {
  GdrBox b;
  const Profile p = b.profile();
  sys::SysRoot root(b.dir);
  EXPECT_TRUE(engine::selftest_agent_args({}, p, root).empty());
}
