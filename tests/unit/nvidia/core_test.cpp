// nvidia/core: which patches change the kernel-independent core, and the core's cache key.
#include "nvidia/core.hpp"

#include <gtest/gtest.h>

#include "nvidia/breakage.hpp"

#include "../source_files.hpp"

namespace p2pnode::nvidia {
namespace {

using test_files::kSrc;
using test_files::slurp;

TEST(NvidiaCore, TheBuiltinPatchesChangeTheKernelLayerOnly) {
  for (const char* name : {"pci-resize-resource-exclude-bars", "io-memory-pfn"}) {
    const std::string text = slurp(kSrc / "daemon/nvidia/patches" / (std::string(name) + ".patch"));
    const auto paths = patched_paths(text);
    ASSERT_FALSE(paths.empty()) << name;
    for (const auto& p : paths) { EXPECT_TRUE(in_kernel_layer(p)) << name << ": " << p; }
  }
  EXPECT_EQ(patched_paths(slurp(kSrc / "daemon/nvidia/patches/pci-resize-resource-exclude-bars.patch")).front(),
            "kernel-open/conftest.sh");
}

TEST(NvidiaCore, PatchedPathsReadsFileHeadersNotHunkBodies) {
  // A removed line "-- x" and an added line "++ y" look like file headers; the hunk counts say not.
  const std::string diff =
      "diff --git a/src/nvidia/a.c b/src/nvidia/a.c\n"
      "--- a/src/nvidia/a.c\t2024-05-01 10:00:00\n"
      "+++ b/src/nvidia/a.c\t2024-05-02 10:00:00\n"
      "@@ -1,3 +1,3 @@\n"
      " keep\n"
      "--- x\n"
      "+++ y\n"
      " keep\n"
      "--- a/kernel-open/nvidia/gone.c\n"
      "+++ /dev/null\n"
      "@@ -1 +0,0 @@\n"
      "-int gone;\n"
      "\\ No newline at end of file\n"
      "--- /dev/null\n"
      "+++ b/kernel-open/nvidia/new.c\n"
      "@@ -0,0 +1 @@\n"
      "+int x;\n";
  EXPECT_EQ(patched_paths(diff),
            (std::vector<std::string>{"src/nvidia/a.c", "kernel-open/nvidia/gone.c", "kernel-open/nvidia/new.c"}));
  EXPECT_TRUE(patched_paths("not a diff\n").empty());
  EXPECT_TRUE(patched_paths("").empty());
}

TEST(NvidiaCore, DecidesWhetherOneCoreServesEveryKernel) {
  const std::string layer =
      "--- a/kernel-open/nvidia/nv-pci.c\n+++ b/kernel-open/nvidia/nv-pci.c\n@@ -1 +1 @@\n-a\n+b\n";
  const std::string core =
      "--- a/src/nvidia/src/kernel/gpu/bus/kern_bus.c\n+++ b/src/nvidia/src/kernel/gpu/bus/kern_bus.c\n"
      "@@ -1 +1 @@\n-a\n+b\n";
  // Kernel-layer patches, conditional or not: one core, nothing to apply to it.
  auto d = decide_core({{"01-a.patch", layer, ""}, {"02-b.patch", layer, "^6\\.1[0-9]"}});
  EXPECT_TRUE(d.reuse);
  EXPECT_TRUE(d.apply.empty());
  // A core patch for every kernel: applied to the core before it is built.
  d = decide_core({{"01-a.patch", layer, ""}, {"02-p2p.patch", core, ""}});
  EXPECT_TRUE(d.reuse);
  EXPECT_EQ(d.apply, (std::vector<std::size_t>{1}));
  // A core patch for some kernels only: the core differs between kernels, each builds its own.
  d = decide_core({{"01-p2p.patch", core, "^6\\.1[0-9]"}});
  EXPECT_FALSE(d.reuse);
  EXPECT_EQ(
      d.why_not,
      "patch 01-p2p.patch changes src/nvidia/src/kernel/gpu/bus/kern_bus.c (the kernel-independent core) but only "
      "for kernels matching ^6\\.1[0-9], so the core differs between kernels");
  // A patch p2pnode cannot read might change anything.
  d = decide_core({{"01-odd.patch", "binary junk", ""}});
  EXPECT_FALSE(d.reuse);
  EXPECT_NE(d.why_not.find("01-odd.patch names no file"), std::string::npos);
  EXPECT_TRUE(decide_core({}).reuse);
  // The builtin peer-address-alignment patch changes the core (for every kernel): applied to it once.
  const auto align = builtin_patch("peer-address-alignment");
  ASSERT_TRUE(align);
  d = decide_core({{"01-pci.patch", layer, ""}, {"02-peer-address-alignment.patch", *align, ""}});
  EXPECT_TRUE(d.reuse);
  EXPECT_EQ(d.apply, (std::vector<std::size_t>{1}));
}

TEST(NvidiaCore, TheKeyFollowsEveryInput) {
  const CoreInputs base{"aa", {}, "gcc (Debian 12.2.0-14) 12.2.0", "GNU ld 2.40", "x86_64"};
  const auto k = core_key(base);
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(core_key(base), k);
  auto v = base;
  v.source_sha256 = "ab";
  EXPECT_NE(core_key(v), k);
  v = base;
  v.patch_sha256 = {"cc"};
  EXPECT_NE(core_key(v), k);
  v = base;
  v.compiler = "gcc (Debian 14.2.0-1) 14.2.0";
  EXPECT_NE(core_key(v), k);
  v = base;
  v.linker = "GNU ld 2.41";
  EXPECT_NE(core_key(v), k);
  v = base;
  v.arch = "aarch64";
  EXPECT_NE(core_key(v), k);
}

}  // namespace
}  // namespace p2pnode::nvidia
