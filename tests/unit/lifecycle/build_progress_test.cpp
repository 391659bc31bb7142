#include "lifecycle/build_progress.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace p2pnode::lifecycle {
namespace {

// Lines as the real 550.90.07-p2p build writes them: NVIDIA's src/ makefiles, then Kbuild.
const char* kTail =
    " CONFTEST: follow_pfn\n"
    "   CC           _out/Linux_x86_64/g_nvid_string.c\n"
    "   CC           src/nvidia/generated/g_kernel_bif_nvoc.c\n"
    "  CC [M]  /var/lib/dkms/nvidia-p2p/550.90.07/build/kernel-open/nvidia/nv-pci.o\n"
    "/var/lib/dkms/nvidia-p2p/550.90.07/build/kernel-open/nvidia/nv-pci.c: In function 'nv_resize_pcie_bars':\n";

TEST(BuildProgress, CompilingNow) {
  EXPECT_EQ(compiling_now(kTail), "/var/lib/dkms/nvidia-p2p/550.90.07/build/kernel-open/nvidia/nv-pci.o");
  EXPECT_EQ(compiling_now("   CC           src/nvidia/generated/g_kernel_bif_nvoc.c\n"),
            "src/nvidia/generated/g_kernel_bif_nvoc.c");
  EXPECT_FALSE(compiling_now("make[1]: Entering directory\n"));
  // The core's own Makefile names its component first.
  EXPECT_EQ(compiling_now(" [ nvidia            ]  CC           src/kernel/mem_mgr/vaspace.c\n"
                          " [ nvidia            ]  CC           src/kernel/mem_mgr/video_mem.c\n"),
            "src/kernel/mem_mgr/video_mem.c");
  EXPECT_FALSE(compiling_now(""));
}

// A fake clock: a 200 s build polled every 5 s prints a line every 30 s, never more than 30 s apart.
TEST(BuildProgress, ALineAtLeastEveryThirtySeconds) {
  BuildProgress p(30);
  std::vector<double> at;
  std::vector<std::string> lines;
  std::uintmax_t size = 0;
  for (double t = 5; t <= 200; t += 5) {
    if (t >= 20) { size += 10 * 1024; }
    const std::optional<std::uintmax_t> sz = t >= 20 ? std::optional(size) : std::nullopt;
    if (auto l = p.tick(t, sz, kTail)) {
      at.push_back(t);
      lines.push_back(*l);
    }
  }
  ASSERT_EQ(at, (std::vector<double>{30, 60, 90, 120, 150, 180}));
  EXPECT_EQ(lines[0],
            "still building after 30 s; make.log 30 KiB (+30 KiB), at "
            "/var/lib/dkms/nvidia-p2p/550.90.07/build/kernel-open/nvidia/nv-pci.o");
  EXPECT_EQ(lines[1].substr(0, 50), "still building after 60 s; make.log 90 KiB (+60 Ki");
  BuildProgress q(30);
  EXPECT_EQ(*q.tick(31, std::nullopt, ""), "still building after 31 s; no make.log yet");
  EXPECT_FALSE(q.tick(60, 100, ""));
  EXPECT_EQ(*q.tick(61, 100, ""), "still building after 61 s; make.log 100 B (+100 B)");
  EXPECT_EQ(*q.tick(95, 100, ""), "still building after 95 s; make.log 100 B (no new output)");
  // Another log (the NVIDIA core's build) is named as it is.
  BuildProgress c(30, "nvidia-p2p-550.90.07-core.log");
  EXPECT_EQ(*c.tick(30, 2048, ""), "still building after 30 s; nvidia-p2p-550.90.07-core.log 2 KiB (+2 KiB)");
}

// The watcher thread with a short interval: lines come while the "build" runs and stop after it.
TEST(BuildProgress, WatcherPrintsUntilDestroyed) {
  std::atomic<int> polls{0};
  std::vector<std::string> out;
  std::mutex mu;
  {
    ProgressWatcher w(
        [&] {
          ++polls;
          return ProgressWatcher::Sample{std::uintmax_t(polls * 2048), kTail};
        },
        [&](const std::string& l) {
          std::lock_guard lk(mu);
          out.push_back(l);
        },
        "make.log", 0.05, std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::lock_guard lk(mu);
  const auto n = out.size();
  EXPECT_GE(n, 2u);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out[0].rfind("still building after 0 s; make.log", 0), 0u) << out[0];
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(out.size(), n);  // nothing after the watcher is gone
}

}  // namespace
}  // namespace p2pnode::lifecycle
