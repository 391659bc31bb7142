// platform.peer_alignment on the AM5 box, with a staged tree that refuses unaligned peer addresses,
// one that accepts them, none, and a profile that carries the builtin patch.
#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "probe/probe.hpp"
#include "unit/source_files.hpp"

using namespace p2pnode;

namespace {
using p2pnode::test_files::kSrcDir;

Profile am5_profile(bool with_patch) {
  Profile p;
  p.name = "am5";
  DriverSpec d;
  d.version = "595.58.03";
  ModuleSource ms;
  ms.name = "nvidia-p2p";
  if (with_patch) {
    Artifact a;
    a.builtin = "peer-address-alignment";
    ms.patches.push_back(a);
  }
  d.kernel_module = ms;
  p.driver = d;
  return p;
}
}  // namespace

TEST(PeerAlignmentCheck, TheStagedTreesSourceDecides) {
  Inventory inv = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/am5-2x5090"));
  // Not staged yet: a warning that says it cannot tell and offers the patch.
  auto fs = checks::check_peer_alignment(am5_profile(false), inv);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::warning);
  EXPECT_NE(fs[0].summary.find("not staged in /usr/src yet"), std::string::npos) << fs[0].summary;
  EXPECT_NE(fs[0].remediation.find("{builtin: peer-address-alignment}"), std::string::npos);

  inv.nvidia.peer_alignment["/usr/src/nvidia-p2p-595.58.03"] = true;
  fs = checks::check_peer_alignment(am5_profile(false), inv);
  EXPECT_EQ(fs[0].severity, Severity::warning);
  EXPECT_EQ(fs[0].summary.rfind("/usr/src/nvidia-p2p-595.58.03 refuses peer DMA addresses not aligned at 512 MiB: On "
                                "AMD Raphael/Granite Ridge root complex 1022:14d8",
                                0),
            0u)
      << fs[0].summary;
  EXPECT_EQ(fs[0].observed["demands_512mib_alignment"], true);

  fs = checks::check_peer_alignment(am5_profile(true), inv);
  EXPECT_EQ(fs[0].severity, Severity::ok) << fs[0].summary;

  inv.nvidia.peer_alignment["/usr/src/nvidia-p2p-595.58.03"] = false;
  fs = checks::check_peer_alignment(am5_profile(false), inv);
  EXPECT_EQ(fs[0].severity, Severity::ok) << fs[0].summary;
  EXPECT_NE(fs[0].summary.find("accepts peer DMA addresses"), std::string::npos);
}

TEST(PeerAlignmentCheck, QuietWhereThePeerAddressIsAligned) {
  const Inventory inv = probe::probe_inventory(sys::SysRoot(kSrcDir + "/tests/fixtures/tinybox-6x4090"));
  EXPECT_TRUE(checks::check_peer_alignment(am5_profile(false), inv).empty());
}
