// nvidia/patch_report: GNU patch's words read back into failed hunks, missing files and rejects.
// The outputs are GNU patch 2.7's own (Debian 12 and 13), captured from real runs.
#include "nvidia/patch_report.hpp"

#include <gtest/gtest.h>

namespace p2pnode::nvidia {
namespace {

TEST(PatchReport, FailedHunksAreNamedWithTheirFileAndLine) {
  const auto o = read_patch_output(
      "patching file src/nvidia/generated/g_kern_bus_nvoc.c\n"
      "Hunk #1 succeeded at 130 (offset 10 lines).\n"
      "Hunk #2 FAILED at 1214.\n"
      "Hunk #3 succeeded at 1300 with fuzz 2 (offset 12 lines).\n"
      "1 out of 3 hunks FAILED -- saving rejects to file /x/.rejects\n"
      "patching file src/nvidia/src/kernel/rmapi/nv_gpu_ops.c\n"
      "Hunk #1 FAILED at 40 (different line endings).\n"
      "1 out of 1 hunk FAILED -- saving rejects to file /x/.rejects\n");
  ASSERT_EQ(o.failed.size(), 2u);
  EXPECT_EQ(o.failed[0].file, "src/nvidia/generated/g_kern_bus_nvoc.c");
  EXPECT_EQ(o.failed[0].hunk, 2);
  EXPECT_EQ(o.failed[0].line, 1214);
  EXPECT_EQ(o.failed[1].file, "src/nvidia/src/kernel/rmapi/nv_gpu_ops.c");
  EXPECT_EQ(o.failed[1].line, 40);
  EXPECT_EQ(o.fuzzed, 1);
  EXPECT_FALSE(o.clean());

  const std::string rej =
      "--- a/src/nvidia/generated/g_kern_bus_nvoc.c\n+++ b/src/nvidia/generated/g_kern_bus_nvoc.c\n"
      "@@ -1214,2 +1214,2 @@\n ctx\n---- a removed line that starts with dashes\n+++++ an added one\n"
      "--- a/src/nvidia/src/kernel/rmapi/nv_gpu_ops.c\n+++ b/src/nvidia/src/kernel/rmapi/nv_gpu_ops.c\n"
      "@@ -40 +40 @@\n-old\n+new\n\\ No newline at end of file\n";
  const auto hunks = reject_hunks(rej);
  ASSERT_EQ(hunks.size(), 2u);
  EXPECT_EQ(hunks[0],
            "--- a/src/nvidia/generated/g_kern_bus_nvoc.c\n+++ b/src/nvidia/generated/g_kern_bus_nvoc.c\n"
            "@@ -1214,2 +1214,2 @@\n ctx\n---- a removed line that starts with dashes\n+++++ an added one\n");
  EXPECT_EQ(hunks[1].substr(0, 46), "--- a/src/nvidia/src/kernel/rmapi/nv_gpu_ops.c");
  EXPECT_NE(hunks[1].find("+new\n\\ No newline at end of file\n"), std::string::npos);

  const auto m = describe_patch_failure("02-p2p.patch", "NVIDIA 595.45.04", o, hunks, 4);
  EXPECT_EQ(m.substr(0, m.find('\n')),
            "patch 02-p2p.patch does not apply to NVIDIA 595.45.04: hunk #2 of src/nvidia/generated/g_kern_bus_nvoc.c "
            "FAILED at line 1214 (2 hunk(s) failed in 2 file(s): src/nvidia/generated/g_kern_bus_nvoc.c, "
            "src/nvidia/src/kernel/rmapi/nv_gpu_ops.c); the tree's code there differs from what the patch expects: "
            "use a patch made for this release");
  EXPECT_NE(m.find("\nthe hunk that failed:\n  --- a/src/nvidia/generated/g_kern_bus_nvoc.c\n"), std::string::npos)
      << m;
  EXPECT_NE(m.find("  @@ -1214,2 +1214,2 @@\n   ctx\n  … (2 more lines)"), std::string::npos) << m;
}

TEST(PatchReport, MissingFilesReversedPatchesAndGarbageSayWhatTheyAre) {
  const auto missing = read_patch_output(
      "can't find file to patch at input line 4\n"
      "Perhaps you used the wrong -p or --strip option?\n"
      "The text leading up to this was:\n"
      "--------------------------\n"
      "|diff -ru t/a/f.txt t2/a/f.txt\n"
      "|--- t/kernel-open/nvidia/nv-p2p.c\t2026-11-27 10:43:35.247335636 +0000\n"
      "|+++ t2/kernel-open/nvidia/nv-p2p.c\t2026-11-27 10:43:35.254084551 +0000\n"
      "--------------------------\n"
      "No file to patch.  Skipping patch.\n"
      "2 out of 2 hunks ignored\n");
  ASSERT_EQ(missing.missing.size(), 1u);
  EXPECT_EQ(missing.missing[0], "kernel-open/nvidia/nv-p2p.c");
  EXPECT_NE(describe_patch_failure("01-x.patch", "T", missing, {}).find("the tree has no kernel-open/nvidia/nv-p2p.c"),
            std::string::npos);

  const auto reversed = read_patch_output(
      "patching file a/f.txt\nReversed (or previously applied) patch detected!  Skipping patch.\n"
      "2 out of 2 hunks ignored -- saving rejects to file /tmp/pt/out2.rej\n");
  EXPECT_TRUE(reversed.reversed);
  EXPECT_TRUE(reversed.failed.empty());
  EXPECT_NE(describe_patch_failure("01-x.patch", "T", reversed, {}).find("already in the tree"), std::string::npos);

  const auto garbage = read_patch_output("patch: **** Only garbage was found in the patch input.\n");
  EXPECT_FALSE(garbage.clean());
  EXPECT_NE(
      describe_patch_failure("01-x.patch", "T", garbage, {}).find("\"Only garbage was found in the patch input.\""),
      std::string::npos);

  const auto ok = read_patch_output("patching file a/f.txt\nHunk #2 succeeded at 27 with fuzz 2.\n");
  EXPECT_TRUE(ok.clean());
  EXPECT_EQ(ok.fuzzed, 1);
}

TEST(PatchReport, InputsAreBothSidesAndGitRenameSources) {
  const std::string diff =
      "diff --git a/src/old.c b/src/new.c\nsimilarity index 90%\nrename from src/old.c\nrename to src/new.c\n"
      "--- a/src/old.c\n+++ b/src/new.c\n@@ -1 +1 @@\n--- not a header\n+++ nor this\n"
      "--- /dev/null\n+++ b/kernel-open/added.c\n@@ -0,0 +1 @@\n+x\n";
  EXPECT_EQ(patch_inputs(diff), (std::vector<std::string>{"src/new.c", "kernel-open/added.c", "src/old.c"}));
}

}  // namespace
}  // namespace p2pnode::nvidia
