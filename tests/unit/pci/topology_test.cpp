// Pair classes PIX/PXB/PHB/NODE/SYS, from the fixtures' sysfs paths and from hand-made devices.
#include "pci/topology.hpp"

#include <gtest/gtest.h>

#include "probe/probe.hpp"
#include "sys/sysroot.hpp"
#include "unit/fixture_inventory.hpp"
#include "unit/source_files.hpp"

using namespace p2pnode;
using namespace p2pnode::pci;

namespace {
using p2pnode::test_files::probe_fixture;

std::string class_of_pair(const Inventory& inv, const std::string& a, const std::string& b) {
  const PciDevice* da = inv.find(a);
  const PciDevice* db = inv.find(b);
  if (!da || !db) { return "missing"; }
  return to_string(classify_pair(*da, *db));
}

PciDevice dev(std::string bdf, std::string rc, std::vector<std::string> up, int numa) {
  PciDevice d;
  d.bdf = std::move(bdf);
  d.root_complex = std::move(rc);
  d.upstream = std::move(up);
  d.numa_node = numa;
  return d;
}
}  // namespace

TEST(Topology, FixturePairsMatchWhatEachFixtureIsFor) {
  const auto nvme = probe_fixture("epyc-8x4090-4nvme");
  EXPECT_EQ(class_of_pair(nvme, "0000:83:00.0", "0000:84:00.0"), "PIX");  // two GPUs under one switch
  EXPECT_EQ(class_of_pair(nvme, "0000:83:00.0", "0000:87:00.0"), "PXB");  // GPU and NVMe across switch levels
  EXPECT_EQ(class_of_pair(nvme, "0000:87:00.0", "0000:88:00.0"), "PIX");
  EXPECT_EQ(class_of_pair(nvme, "0000:41:00.0", "0000:42:00.0"), "PHB");
  EXPECT_EQ(class_of_pair(nvme, "0000:01:00.0", "0000:83:00.0"), "SYS");
  EXPECT_EQ(class_of_pair(nvme, "0000:83:00.0", "0000:83:00.0"), "X");

  const auto tiny = probe_fixture("tinybox-6x4090");
  EXPECT_EQ(class_of_pair(tiny, "0000:81:00.0", "0000:82:00.0"), "PHB");
  EXPECT_EQ(class_of_pair(tiny, "0000:01:00.0", "0000:42:00.0"), "NODE");

  const auto numa = probe_fixture("epyc-8x4090-numa");
  EXPECT_EQ(class_of_pair(numa, "0000:01:00.0", "0000:25:00.0"), "SYS");
  EXPECT_EQ(class_of_pair(numa, "0000:81:00.0", "0000:e1:00.0"), "SYS");

  EXPECT_EQ(class_of_pair(probe_fixture("rtx3090-nvme"), "0000:0a:00.0", "0000:0b:00.0"), "PHB");
}

TEST(Topology, MatrixIsSymmetricWithSelfOnTheDiagonal) {
  const auto inv = probe_fixture("epyc-8x4090-4nvme");
  const auto gpus = inv.gpus();
  ASSERT_EQ(gpus.size(), 8u);
  const auto m = topology_matrix(gpus);
  ASSERT_EQ(m.bdfs.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(m.cls[i][i], PairClass::self);
    for (std::size_t j = 0; j < 8; ++j) { EXPECT_EQ(m.cls[i][j], m.cls[j][i]) << i << "," << j; }
  }
}

TEST(Topology, HandMadeClasses) {
  const auto a = dev("0000:03:00.0", "pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}, 0);
  const auto b = dev("0000:04:00.0", "pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:01.0"}, 0);
  const auto c = dev("0000:06:00.0", "pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:02.0", "0000:05:00.0"}, 0);
  const auto d = dev("0000:41:00.0", "pci0000:00", {"0000:00:03.1"}, 0);
  const auto e = dev("0000:81:00.0", "pci0000:80", {"0000:80:01.1"}, 0);
  const auto f = dev("0000:c1:00.0", "pci0000:c0", {"0000:c0:01.1"}, 1);
  EXPECT_EQ(classify_pair(a, b), PairClass::pix);
  EXPECT_EQ(classify_pair(a, c), PairClass::pxb);
  EXPECT_EQ(classify_pair(a, d), PairClass::phb);
  EXPECT_EQ(classify_pair(a, e), PairClass::node);
  EXPECT_EQ(classify_pair(a, f), PairClass::sys);
  EXPECT_EQ(classify_pair(f, a), PairClass::sys);
  EXPECT_STREQ(to_string(PairClass::pxb), "PXB");
  EXPECT_STREQ(to_string(PairClass::node), "NODE");
}

TEST(Topology, BridgesBetween) {
  const auto a = dev("0000:03:00.0", "pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}, 0);
  const auto b = dev("0000:04:00.0", "pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:01.0"}, 0);
  EXPECT_EQ(bridges_between(a, b), (std::vector<std::string>{"0000:01:00.0", "0000:02:00.0", "0000:02:01.0"}));
  const auto d = dev("0000:41:00.0", "pci0000:00", {"0000:00:03.1"}, 0);
  // Meeting only at the host bridge: every bridge on both paths, root ports included.
  EXPECT_EQ(bridges_between(a, d),
            (std::vector<std::string>{"0000:00:01.0", "0000:00:03.1", "0000:01:00.0", "0000:02:00.0"}));
}
