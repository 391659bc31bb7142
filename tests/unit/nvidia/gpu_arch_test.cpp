// The architecture table: device-id ranges, first branches, and the judgement that names them.
#include "nvidia/gpu_arch.hpp"

#include <gtest/gtest.h>

#include "nvidia/gpu_table.hpp"

using namespace p2pnode;
using namespace p2pnode::nvidia;

TEST(GpuArch, KnownCardsFallInTheirArchitecture) {
  struct Want {
    std::uint16_t id;
    const char* arch;
    int first;
  };
  for (const auto& w :
       {Want{0x1e07, "Turing (TU10x/TU11x)", 515}, Want{0x2182, "Turing (TU10x/TU11x)", 515},
        Want{0x2204, "Ampere (GA10x)", 515}, Want{0x2489, "Ampere (GA10x)", 515}, Want{0x20b5, "Ampere (GA100)", 515},
        Want{0x2330, "Hopper (GH100)", 525}, Want{0x2335, "Hopper (GH100)", 525}, Want{0x2684, "Ada (AD10x)", 520},
        Want{0x28f8, "Ada (AD10x)", 520}, Want{0x2901, "Blackwell (GB10x)", 570},
        Want{0x2b85, "Blackwell (GB20x)", 570}, Want{0x2c02, "Blackwell (GB20x)", 570},
        Want{0x2bb1, "Blackwell (GB20x)", 570}}) {
    const GpuArch* a = find_gpu_arch(w.id);
    ASSERT_NE(a, nullptr) << std::hex << w.id;
    EXPECT_EQ(a->name, w.arch) << std::hex << w.id;
    EXPECT_EQ(a->first_branch, w.first) << std::hex << w.id;
    EXPECT_FALSE(a->p2p.empty());
  }
  EXPECT_EQ(find_gpu_arch(0x1b06), nullptr);  // GTX 1080 Ti (Pascal): no open module at all
  EXPECT_EQ(find_gpu_arch(0x0000), nullptr);
}

TEST(GpuArch, EveryModelOfTheVramTableHasAnArchitecture) {
  for (std::uint32_t id = 0; id <= 0xffff; ++id) {
    if (auto m = find_gpu_model(static_cast<std::uint16_t>(id))) {
      EXPECT_NE(find_gpu_arch(m->device_id), nullptr) << m->name;
    }
  }
}

TEST(GpuArch, A5090WithBranch550NamesTheFirstBranchThatDrivesIt) {
  const auto why = branch_cannot_drive(0x2b85, "550.90.07");
  ASSERT_TRUE(why);
  EXPECT_EQ(*why,
            "driver 550.90.07 (branch 550) cannot drive 10de:2b85, a Blackwell (GB20x) GPU: the first branch "
            "that supports it is 570 (e.g. 570.86.16)");
  EXPECT_TRUE(branch_cannot_drive(0x2b85, "565.57.01"));
  EXPECT_FALSE(branch_cannot_drive(0x2b85, "570.86.16"));
  EXPECT_FALSE(branch_cannot_drive(0x2b85, "595.58.03"));
  EXPECT_FALSE(branch_cannot_drive(0x2684, "550.90.07"));
  EXPECT_TRUE(branch_cannot_drive(0x2684, "515.43.04"));   // Ada came with 520
  EXPECT_FALSE(branch_cannot_drive(0x1b06, "550.90.07"));  // unknown device: no judgement
  EXPECT_FALSE(branch_cannot_drive(0x2b85, "custom"));     // unknown version: no judgement
}

TEST(GpuArch, GpusNotDrivenListsEachGpuOfTheBox) {
  Inventory inv;
  for (const char* bdf : {"0000:01:00.0", "0000:41:00.0"}) {
    PciDevice d;
    d.bdf = bdf;
    d.vendor = 0x10de;
    d.device = 0x2b85;
    d.class_code = 0x030000;
    d.kind = DeviceKind::gpu;
    inv.devices.push_back(d);
  }
  const auto lines = gpus_not_driven(inv, "550.90.07");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("0000:01:00.0: driver 550.90.07 (branch 550) cannot drive 10de:2b85", 0), 0u);
  EXPECT_TRUE(gpus_not_driven(inv, "570.148.08").empty());
}
