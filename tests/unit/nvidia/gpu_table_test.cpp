#include "nvidia/gpu_table.hpp"

#include <gtest/gtest.h>

using namespace p2pnode;
using namespace p2pnode::nvidia;

TEST(GpuTable, KnownModels) {
  struct Want {
    std::uint16_t id;
    Bytes vram;
  };
  for (const Want w : {Want{0x2204, 24 * GiB}, Want{0x2684, 24 * GiB}, Want{0x2b85, 32 * GiB}, Want{0x20b2, 80 * GiB},
                       Want{0x2330, 80 * GiB}, Want{0x2335, 144 * GiB}, Want{0x2805, 16 * GiB}}) {
    SCOPED_TRACE(w.id);
    const auto m = find_gpu_model(w.id);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->vram, w.vram);
    EXPECT_FALSE(m->name.empty());
  }
  EXPECT_EQ(find_gpu_model(0x2684)->name, "GeForce RTX 4090");
  EXPECT_EQ(find_gpu_model(0x2330)->name, "H100 80GB HBM3");
}

TEST(GpuTable, UnknownIdIsNullopt) {
  EXPECT_FALSE(find_gpu_model(0x0000));
  EXPECT_FALSE(find_gpu_model(0xffff));
  EXPECT_FALSE(find_gpu_model(0x10de));
}
