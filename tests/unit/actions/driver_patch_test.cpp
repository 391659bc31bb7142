// apply's trial of the staged patches before any build (lifecycle/patch_check): a patch that does
// not fit the tree, or needs fuzz, is refused naming its hunk; GNU patch itself runs (FakeDkms).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "actions/driver_install.hpp"
#include "driver_fixture.hpp"
#include "lifecycle/artifact.hpp"
#include "nvidia/sha256.hpp"

namespace p2pnode::actions {
namespace {

// A patch made for another release: apply tries the patches on a scratch copy first and refuses
// naming the hunk that failed and showing it; nothing reaches DKMS or /usr/src.
TEST(DriverModule, APatchThatDoesNotFitTheTreeIsRefusedNamingTheHunk) {
  ModuleBench b;
  auto& [box, root, runner, dkms] = b;
  Inventory inv;
  inv.kernel.release = kKernel;
  std::vector<std::string> log;
  // The tree as `text`, pinned anew (its digest changes with it), through apply.
  auto attempt = [&](const std::string& text) {
    box.write("srv/src/p2ptest.c", text);
    const Profile p = module_profile(box);
    ApplyContext ctx{root, runner, p};
    ctx.log = [&](std::string_view, std::string_view, std::string_view l) { log.emplace_back(l); };
    return make_driver_module()->apply(ctx, inv).at(0);
  };
  auto r = attempt("int z;\n");  // the tree moved on: the patch's context is gone
  EXPECT_EQ(r.outcome, StepOutcome::refused);
  EXPECT_NE(r.message.find("refused before any build: patch 01-0001-mark.patch does not apply to the staged tree of "
                           "p2ptest/1.5: hunk #1 of p2ptest.c FAILED at line 1"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("the hunk that failed:\n  --- p2ptest.c"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("  -int x;\n  +int y;"), std::string::npos) << r.message;
  EXPECT_EQ(runner.count("dkms"), 1u) << "dkms status only";
  EXPECT_FALSE(root.exists("/usr/src/p2ptest-1.5"));
  EXPECT_FALSE(root.exists("/var/lib/p2pnode/dkms/patch-check")) << "the scratch copy is gone";
  EXPECT_EQ(dkms.builds, 0);

  // Already in the tree: refused as such (DKMS's patch would fail the same way).
  r = attempt("int y;\n");
  EXPECT_EQ(r.outcome, StepOutcome::refused);
  EXPECT_NE(r.message.find("it is already in the tree"), std::string::npos) << r.message;

  // The tree it was made for goes through, and the log says the patches were tried.
  r = attempt("int x;\n");
  EXPECT_EQ(r.outcome, StepOutcome::changed) << r.message;
  EXPECT_EQ(dkms.builds, 1);
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return l.find("patches: 1 apply to the staged tree of p2ptest/1.5 in order") != std::string::npos;
  }));
}

// A profile's patch must fit with no fuzz: DKMS would take a hunk whose context moved (fuzz 2), and
// such a hunk can land in the wrong function; p2pnode refuses it and says why.
TEST(DriverModule, AProfilePatchThatNeedsFuzzIsRefused) {
  ModuleBench b;
  auto& [box, root, runner, dkms] = b;
  box.write("srv/src/p2ptest.c", "int a2;\nint b;\nint c;\nint x;\nint d;\nint e;\nint f;\n");
  box.write("srv/fuzzy.patch",
            "--- a/p2ptest.c\n+++ b/p2ptest.c\n@@ -1,7 +1,7 @@\n int a;\n int b;\n int c;\n-int x;\n+int y;\n int d;\n"
            " int e;\n int f;\n");
  Artifact patch;
  patch.path = "/srv/fuzzy.patch";
  patch.sha256 = *lifecycle::sha256_file(root, "/srv/fuzzy.patch");
  const Profile p = source_profile(box, "/srv/src", {patch});
  Inventory inv;
  inv.kernel.release = kKernel;
  ApplyContext ctx{root, runner, p};
  const auto r = make_driver_module()->apply(ctx, inv).at(0);
  EXPECT_EQ(r.outcome, StepOutcome::refused);
  EXPECT_NE(r.message.find("patch 01-fuzzy.patch does not apply to the staged tree of p2ptest/1.5: hunk #1 of "
                           "p2ptest.c FAILED at line 1"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("(a profile's patch must apply with no fuzz"), std::string::npos) << r.message;
  EXPECT_EQ(dkms.builds, 0);
  // GNU patch at its default fuzz (DKMS's) would have taken it: the refusal is p2pnode's rule.
  const auto loose = sys::ProcessRunner().run(
      sys::Command{{"patch", "-p1", "--dry-run", "--batch", "-d", (box.dir / "srv/src").string(), "-i",
                    (box.dir / "srv/fuzzy.patch").string()}});
  EXPECT_TRUE(loose.success()) << loose.out << loose.err;
  EXPECT_NE(loose.out.find("with fuzz"), std::string::npos) << loose.out;
}

}  // namespace
}  // namespace p2pnode::actions
