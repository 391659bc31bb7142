// The 512 MiB peer-address alignment: told from a tree's source text (with and without the
// refusal), and the platforms where the peer address is offset, from the root complex's ids.
#include "nvidia/peer_alignment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "probe/probe.hpp"
#include "sys/sysroot.hpp"
#include "unit/source_files.hpp"
#include "unit/temp_dir.hpp"

using namespace p2pnode;
using namespace p2pnode::nvidia;

namespace {
using p2pnode::test_files::kSrcDir;

// The shape of the check in the P2P trees' kern_bus_gh100.c (our own text, same statements).
const std::string kRefuses = R"(
    memdescGetPhysAddrsForGpu(pPeerDmaMemDesc, pSrcGpu, AT_GPU, 0, 0, 1, &peerDmaAddr);

    // Check the if it is aligned to max RM_PAGE_SIZE 512M.
    if (!NV_IS_ALIGNED64(peerDmaAddr, RM_PAGE_SIZE_512M))
    {
        NV_PRINTF(LEVEL_ERROR, "The peer DMA address 0x%llx is not aligned at 0x%llx\n",
                               peerDmaAddr, RM_PAGE_SIZE_512M);

        memdescUnmapIommu(pPeerDmaMemDesc, pSrcGpu->busInfo.iovaspaceId);

        return NV_ERR_INVALID_ADDRESS;
    }

    return NV_OK;
)";
const std::string kWarnsOnly = R"(
    if (!NV_IS_ALIGNED64(peerDmaAddr, RM_PAGE_SIZE_512M))
    {
        NV_PRINTF(LEVEL_WARNING, "The peer DMA address 0x%llx is not aligned at 0x%llx (accepted)\n",
                               peerDmaAddr, RM_PAGE_SIZE_512M);
    }

    return NV_OK;
)";
}  // namespace

TEST(PeerAlignment, TheTreesSourceSaysWhetherItRefuses) {
  EXPECT_EQ(demands_peer_alignment(kRefuses), std::optional<bool>(true));
  EXPECT_EQ(demands_peer_alignment(kWarnsOnly), std::optional<bool>(false));
  // A one-statement if without braces.
  EXPECT_EQ(
      demands_peer_alignment("if (!NV_IS_ALIGNED64(peerDmaAddr, RM_PAGE_SIZE_512M)) return NV_ERR_INVALID_ADDRESS;"),
      std::optional<bool>(true));
  // No such check (a later tree that dropped it, or another layout): unknown, not "fine".
  EXPECT_EQ(demands_peer_alignment("static NV_STATUS f(void) { return NV_OK; }"), std::nullopt);
  EXPECT_EQ(demands_peer_alignment(""), std::nullopt);
}

TEST(PeerAlignment, Am5WithTwoGpusIsAnOffsetPlatform) {
  const Inventory am5 = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/am5-2x5090"));
  const auto p = offset_peer_address_platform(am5);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, "AMD Raphael/Granite Ridge root complex 1022:14d8 (AM5: X670, X870)");
}

TEST(PeerAlignment, EpycIsNotAndOneGpuHasNoPeer) {
  // Rome shares the Matisse host bridge id (1022:1480) but has several root complexes.
  for (const char* f : {"tinybox-6x4090", "epyc-8x4090-numa", "mixed-4090-4060ti", "h200-4gpu"}) {
    EXPECT_FALSE(offset_peer_address_platform(probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/" + f))))
        << f;
  }
  // One Matisse root complex (a B550 board) but a single GPU: no peer, nothing to say.
  EXPECT_FALSE(
      offset_peer_address_platform(probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/rtx3090-nvme"))));
}

TEST(PeerAlignment, OneMatisseRootComplexWithTwoGpusIsX570) {
  Inventory inv = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/rtx3090-nvme"));
  PciDevice second = *inv.gpus().front();
  second.bdf = "0000:0c:00.0";
  inv.devices.push_back(second);
  const auto p = offset_peer_address_platform(inv);
  ASSERT_TRUE(p);
  EXPECT_NE(p->find("1022:1480 (AM4: X570, B550)"), std::string::npos);
}

TEST(PeerAlignment, TheProbeReadsEveryTreeInUsrSrc) {
  const p2pnode::test::TempDir scratch("align");
  const std::filesystem::path dir = scratch.path();
  auto put = [&](const std::string& tree, const std::string& text) {
    const auto f = dir / "usr/src" / tree / std::string(kPeerAlignmentFile);
    std::filesystem::create_directories(f.parent_path());
    std::ofstream(f) << text;
  };
  put("nvidia-p2p-550.90.07", kRefuses);
  put("nvidia-p2p-565.57.01", kWarnsOnly);
  put("nvidia-p2p-1.0", "nothing here");
  std::filesystem::create_directories(dir / "usr/src/linux-headers-6.1.0-56-common");
  const auto s = probe::probe_nvidia_driver(sys::SysRoot(dir));
  ASSERT_EQ(s.peer_alignment.size(), 3u);
  EXPECT_EQ(s.peer_alignment.at("/usr/src/nvidia-p2p-550.90.07"), std::optional<bool>(true));
  EXPECT_EQ(s.peer_alignment.at("/usr/src/nvidia-p2p-565.57.01"), std::optional<bool>(false));
  EXPECT_EQ(s.peer_alignment.at("/usr/src/nvidia-p2p-1.0"), std::nullopt);
}
