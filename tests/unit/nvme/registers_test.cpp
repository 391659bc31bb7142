#include "nvme/registers.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace p2pnode::nvme {
namespace {

std::vector<std::uint8_t> bar0(std::uint64_t cap, std::uint32_t vs, std::uint32_t csts) {
  std::vector<std::uint8_t> b(kRegisterBytes, 0);
  for (int i = 0; i < 8; ++i) { b[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(cap >> (8 * i)); }
  for (int i = 0; i < 4; ++i) { b[0x08 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(vs >> (8 * i)); }
  for (int i = 0; i < 4; ++i) { b[0x1C + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(csts >> (8 * i)); }
  return b;
}

TEST(NvmeRegisters, DecodesTheSn530FromSeed002) {
  // NVMe 1.4.0, MQES 1023 (0's based), DSTRD 0, TO 0x14 (10 s).
  const auto r = decode_nvme_registers(bar0(0x0000'0020'1403'03ffULL, 0x00010400, 0x1));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->version(), "1.4.0");
  EXPECT_EQ(r->mqes(), 1024);
  EXPECT_EQ(r->dstrd(), 0);
  EXPECT_EQ(r->timeout_ms(), 10000);
  EXPECT_EQ(nvme_registers_problem(*r), "");
  EXPECT_EQ(to_json(*r)["vs"], "0x00010400");
  EXPECT_EQ(to_json(*r)["ready"], true);
}

TEST(NvmeRegisters, AllFsMeansAsleepOrGone) {
  const auto r = decode_nvme_registers(bar0(~0ULL, 0xFFFFFFFF, 0xFFFFFFFF));
  ASSERT_TRUE(r);
  EXPECT_NE(nvme_registers_problem(*r).find("all-Fs"), std::string::npos);
}

TEST(NvmeRegisters, InsaneVersionOrZeroCap) {
  EXPECT_NE(nvme_registers_problem(*decode_nvme_registers(bar0(0x3ff, 0x00070000, 0))).find("not an NVMe version"),
            std::string::npos);
  EXPECT_NE(nvme_registers_problem(*decode_nvme_registers(bar0(0, 0x00010400, 0))).find("CAP reads 0"),
            std::string::npos);
  EXPECT_NE(nvme_registers_problem(*decode_nvme_registers(bar0(0x3ff, 0x00010400, 0xFFFFFFFF))).find("CSTS"),
            std::string::npos);
  EXPECT_EQ(nvme_registers_problem(*decode_nvme_registers(bar0(0x3ff, 0x00020000, 0))), "");
}

TEST(NvmeRegisters, TooShort) { EXPECT_FALSE(decode_nvme_registers(std::vector<std::uint8_t>(8, 0))); }

}  // namespace
}  // namespace p2pnode::nvme
