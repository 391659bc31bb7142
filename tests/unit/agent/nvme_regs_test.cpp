// NVMe register decoding on recorded values: the seed's WD SN530 (seed 002: NVMe 1.4.0, MQES
// 1023, DSTRD 0; CC 0x00464000 read back after the GPU disabled it) and doorbell offsets for
// every DSTRD.
#include "p2pnode/agent/nvme/regs.hpp"

#include <gtest/gtest.h>

using namespace p2pnode::agent::nvme;

TEST(AgentNvmeRegs, CapFieldsFromEveryBit) {
  // MQES 0x3ff, CQR, AMS 0, TO 0x0f (7.5 s), DSTRD 0, NSSRS 0, CSS NVM, MPSMIN 0, MPSMAX 4.
  const Cap c = decode_cap(0x0040'0020'0f01'03ffULL);
  EXPECT_EQ(c.mqes, 1024);
  EXPECT_TRUE(c.cqr);
  EXPECT_EQ(c.ams, 0);
  EXPECT_EQ(c.timeout_ms, 7500);
  EXPECT_EQ(c.dstrd, 0);
  EXPECT_FALSE(c.nssrs);
  EXPECT_EQ(c.css, 1);
  EXPECT_TRUE(c.supports_nvm());
  EXPECT_EQ(c.mpsmin, 0);
  EXPECT_EQ(c.mpsmax, 4);
  EXPECT_EQ(c.min_page_bytes(), 4096U);
  EXPECT_EQ(c.max_page_bytes(), 65536U);
  EXPECT_EQ(c.doorbell_stride_bytes(), 4U);

  // DSTRD 3, NSSRS, CSS NVM + I/O sets + admin-only, MPSMIN 1 (8 KiB), CMBS, AMS 1, TO 0xff.
  const Cap d = decode_cap((1ULL << 57) | (1ULL << 48) | (1ULL << 45) | (0xC1ULL << 37) | (1ULL << 36) | (3ULL << 32) |
                           (0xFFULL << 24) | (1ULL << 17));
  EXPECT_EQ(d.css, 0xC1);
  EXPECT_EQ(d.mpsmin, 1);
  EXPECT_EQ(d.dstrd, 3);
  EXPECT_TRUE(d.nssrs);
  EXPECT_EQ(d.doorbell_stride_bytes(), 32U);
  EXPECT_EQ(d.timeout_ms, 255 * 500);
  EXPECT_EQ(d.ams, 1);
  EXPECT_FALSE(d.cqr);
  EXPECT_EQ(d.mqes, 1);
  EXPECT_TRUE(d.cmbs);
  EXPECT_TRUE(d.bps);
}

TEST(AgentNvmeRegs, VersionOfTheSeedsSn530) {
  const Version v = decode_vs(0x00010400);
  EXPECT_EQ(v.major, 1);
  EXPECT_EQ(v.minor, 4);
  EXPECT_EQ(v.tertiary, 0);
  EXPECT_EQ(v.text(), "1.4.0");
  EXPECT_EQ(decode_vs(0x00020000).text(), "2.0.0");
}

TEST(AgentNvmeRegs, CcAsTheSeedReadItAfterDisabling) {
  // Seed 002: "Writing CC=0x00464000 (EN=0)": IOCQES 4, IOSQES 6, SHN normal, disabled.
  const Cc cc = decode_cc(0x00464000);
  EXPECT_FALSE(cc.en);
  EXPECT_EQ(cc.iosqes, 6);
  EXPECT_EQ(cc.iocqes, 4);
  EXPECT_EQ(cc.shn, 1);
  EXPECT_EQ(cc.css, 0);
  EXPECT_EQ(cc.mps, 0);
  EXPECT_EQ(encode_cc(cc), 0x00464000U);
  // The same enabled, without the shutdown request: what the Linux driver writes.
  EXPECT_EQ(encode_cc({0, true, 0, 0, 0, 0, 6, 4}), 0x00460001U);
}

TEST(AgentNvmeRegs, Csts) {
  const Csts ready = decode_csts(0x1);
  EXPECT_TRUE(ready.rdy);
  EXPECT_FALSE(ready.cfs);
  const Csts shut = decode_csts(0x9);  // RDY, shutdown complete (SHST 10b)
  EXPECT_EQ(shut.shst, 2);
  const Csts fatal = decode_csts(0x3);
  EXPECT_TRUE(fatal.cfs);
  EXPECT_TRUE(decode_csts(0x20).pp);
  EXPECT_TRUE(decode_csts(0x10).nssro);
}

TEST(AgentNvmeRegs, AqaIsZeroBased) {
  EXPECT_EQ(encode_aqa(2, 2), 0x00010001U);
  EXPECT_EQ(encode_aqa(32, 64), 0x003F001FU);
  EXPECT_EQ(aqa_sq_entries(0x003F001F), 32);
  EXPECT_EQ(aqa_cq_entries(0x003F001F), 64);
}

TEST(AgentNvmeRegs, DoorbellOffsetsFollowDstrd) {
  // DSTRD 0 (the seed's SN530, QEMU): admin SQ tail 0x1000, admin CQ head 0x1004, SQ1 0x1008.
  EXPECT_EQ(sq_tail_doorbell(0, 0), 0x1000U);
  EXPECT_EQ(cq_head_doorbell(0, 0), 0x1004U);
  EXPECT_EQ(sq_tail_doorbell(1, 0), 0x1008U);
  EXPECT_EQ(cq_head_doorbell(1, 0), 0x100CU);
  // DSTRD 1: 8-byte stride.
  EXPECT_EQ(cq_head_doorbell(0, 1), 0x1008U);
  EXPECT_EQ(sq_tail_doorbell(1, 1), 0x1010U);
  // DSTRD 3: 32-byte stride.
  EXPECT_EQ(sq_tail_doorbell(0, 3), 0x1000U);
  EXPECT_EQ(cq_head_doorbell(0, 3), 0x1020U);
  EXPECT_EQ(sq_tail_doorbell(2, 3), 0x1080U);
  // DSTRD 15: 128 KiB stride (the largest the field encodes).
  EXPECT_EQ(cq_head_doorbell(0, 15), 0x1000U + (4U << 15));
}

TEST(AgentNvmeRegs, EnableConfig) {
  const Cap nvm = decode_cap(0x0040'0020'0f01'03ffULL);
  const auto e = enable_config(nvm);
  EXPECT_TRUE(e.why_not.empty());
  EXPECT_EQ(e.cc, 0x00460001U);
  // Admin-only controller (CSS bit 7 alone): CC.CSS = 111b.
  const Cap admin = decode_cap((0x80ULL << 37) | 0x0f0103ffULL);
  EXPECT_EQ(decode_cc(enable_config(admin).cc).css, 7);
  // No command set the test can select.
  EXPECT_NE(enable_config(decode_cap(0x0f0103ffULL)).why_not.find("CAP.CSS"), std::string::npos);
  // MPSMIN 1 (8 KiB pages) cannot work with 4 KiB host pages.
  const auto big = enable_config(decode_cap(0x0041'0020'0f01'03ffULL));
  EXPECT_NE(big.why_not.find("8192"), std::string::npos);
}

TEST(AgentNvmeRegs, Hex) {
  EXPECT_EQ(hex32(0x10400), "0x00010400");
  EXPECT_EQ(hex64(0x303c033fffULL), "0x000000303c033fff");
}

TEST(AgentNvmeRegs, RecordedFromQemusNvmeInTheVm) {
  // tests/unit/agent/data/nvme-doorbell-vm.json (QEMU 7.2 -device nvme, kernel 6.1 guest).
  const Cap c = decode_cap(0x004018200f0107ffULL);
  EXPECT_EQ(c.mqes, 2048);
  EXPECT_TRUE(c.cqr);
  EXPECT_EQ(c.timeout_ms, 7500);
  EXPECT_EQ(c.dstrd, 0);
  EXPECT_EQ(c.css, 0xC1);  // NVM, I/O command sets, admin-only
  EXPECT_EQ(c.mpsmin, 0);
  EXPECT_EQ(c.mpsmax, 4);
  EXPECT_EQ(enable_config(c).cc, 0x00460001U);  // the NVM set: CC.CSS 0
  // What Linux's nvme driver left after its shutdown on unbind (read by devmem before VFIO's FLR):
  // CC 0x00464061 = EN, CSS 110b (all I/O sets), SHN normal, IOSQES 6, IOCQES 4; CSTS 9 = RDY,
  // shutdown complete.
  const Cc cc = decode_cc(0x00464061);
  EXPECT_TRUE(cc.en);
  EXPECT_EQ(cc.css, 6);
  EXPECT_EQ(cc.shn, 1);
  const Csts cs = decode_csts(0x9);
  EXPECT_TRUE(cs.rdy);
  EXPECT_EQ(cs.shst, 2);
}
