// Admin queue entries, the Identify Controller command, completion decoding and phase polling,
// and Identify data parsing.
#include "p2pnode/agent/nvme/identify.hpp"
#include "p2pnode/agent/nvme/queue.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

using namespace p2pnode::agent::nvme;

TEST(AgentNvmeQueue, IdentifyControllerCommand) {
  const auto e = identify_controller(0x0D0B, 0x1'2345'6000ULL);
  EXPECT_EQ(e.opcode(), 0x06);
  EXPECT_EQ(e.cid(), 0x0D0B);
  EXPECT_EQ(e.nsid(), 0U);
  EXPECT_EQ(e.prp1(), 0x1'2345'6000ULL);
  EXPECT_EQ(e.prp2(), 0U);
  EXPECT_EQ(e.cdw10(), 1U);  // CNS 01h
  std::array<std::uint8_t, 64> b{};
  e.store(b);
  // Little-endian on the wire: opcode in byte 0, CID in bytes 2..3, PRP1 at 24, CDW10 at 40.
  EXPECT_EQ(b[0], 0x06);
  EXPECT_EQ(b[1], 0x00);  // FUSE 0, PSDT 0: PRPs
  EXPECT_EQ(b[2], 0x0B);
  EXPECT_EQ(b[3], 0x0D);
  EXPECT_EQ(b[24], 0x00);
  EXPECT_EQ(b[25], 0x60);
  EXPECT_EQ(b[26], 0x45);
  EXPECT_EQ(b[27], 0x23);
  EXPECT_EQ(b[28], 0x01);
  EXPECT_EQ(b[40], 0x01);
  for (std::size_t i = 32; i < 40; ++i) EXPECT_EQ(b[i], 0) << "PRP2 byte " << i;
}

TEST(AgentNvmeQueue, CompletionDecoding) {
  // DW2: SQ head 1, SQ id 0; DW3: CID 0x0D0B, status 0, phase 1.
  const std::array<std::uint8_t, 16> ok{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x0B, 0x0D, 0x01, 0x00};
  const auto c = decode_completion(ok);
  EXPECT_TRUE(c.phase());
  EXPECT_TRUE(c.success());
  EXPECT_EQ(c.cid, 0x0D0B);
  EXPECT_EQ(c.sq_head, 1);
  EXPECT_EQ(c.status_text(), "success");
  // Invalid field in command (SC 02h), DNR, phase 0.
  const std::uint16_t sp = (1U << 15) | (0x02U << 1);
  std::array<std::uint8_t, 16> bad{};
  bad[14] = static_cast<std::uint8_t>(sp & 0xFF);
  bad[15] = static_cast<std::uint8_t>(sp >> 8);
  const auto d = decode_completion(bad);
  EXPECT_FALSE(d.phase());
  EXPECT_FALSE(d.success());
  EXPECT_TRUE(d.dnr());
  EXPECT_EQ(d.sc(), 2);
  EXPECT_EQ(d.sct(), 0);
  EXPECT_EQ(d.status_text(), "SCT 0 SC 0x02 (invalid field in command), do not retry");
}

TEST(AgentNvmeQueue, PhasePollingWrapsAndFlips) {
  // A 2-entry CQ: zeroed memory is "old" (phase 0); the controller posts with phase 1 until it
  // wraps, then with phase 0.
  std::vector<std::uint8_t> cq(2 * kCqEntryBytes, 0);
  CompletionPoller p(2);
  EXPECT_FALSE(p.peek(cq).has_value());
  cq[14] = 0x01;  // entry 0, phase 1
  ASSERT_TRUE(p.peek(cq).has_value());
  EXPECT_EQ(p.advance(), 1);
  EXPECT_FALSE(p.peek(cq).has_value());  // entry 1 still phase 0
  cq[16 + 14] = 0x01;
  ASSERT_TRUE(p.peek(cq).has_value());
  EXPECT_EQ(p.advance(), 0);  // wrapped
  EXPECT_FALSE(p.expected_phase());
  EXPECT_FALSE(p.peek(cq).has_value());  // entry 0 still has last round's phase 1
  cq[14] = 0x00;                          // posted again with phase 0
  EXPECT_TRUE(p.peek(cq).has_value());
  // A CQ buffer shorter than the head entry is never read past.
  CompletionPoller q(4);
  q.advance();
  q.advance();
  EXPECT_FALSE(q.peek(cq).has_value());
}

TEST(AgentNvmeQueue, LayoutChecks) {
  AdminLayout l;
  EXPECT_EQ(check_layout(l, 1024), "");
  EXPECT_NE(check_layout(l, 1).find("CAP.MQES"), std::string::npos);
  AdminLayout o = l;
  o.cq_offset = 0;
  EXPECT_NE(check_layout(o, 1024).find("overlap"), std::string::npos);
  AdminLayout m = l;
  m.identify_offset = 8200;
  EXPECT_NE(check_layout(m, 1024).find("aligned"), std::string::npos);
  AdminLayout s = l;
  s.total_bytes = 8192;
  EXPECT_NE(check_layout(s, 1024).find("smaller"), std::string::npos);
  AdminLayout one = l;
  one.sq_entries = 1;
  EXPECT_NE(check_layout(one, 1024).find("at least 2"), std::string::npos);
}

TEST(AgentNvmeIdentify, ParsesSerialModelFirmware) {
  std::vector<std::uint8_t> d(kIdentifyBytes, 0);
  d[0] = 0x36, d[1] = 0x1b;  // QEMU's vendor id 1b36
  std::memset(d.data() + 4, ' ', 60);
  std::memcpy(d.data() + 4, "21165N801234", 12);
  std::memcpy(d.data() + 24, "WDC PC SN530 SDBPNPZ-1T00-1002", 30);
  std::memcpy(d.data() + 64, "21160001", 8);
  d[77] = 5;
  d[80] = 0x00, d[81] = 0x04, d[82] = 0x01;  // VER 1.4.0
  const auto id = parse_identify_controller(d);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->vid, 0x1b36);
  EXPECT_EQ(id->serial, "21165N801234");
  EXPECT_EQ(id->model, "WDC PC SN530 SDBPNPZ-1T00-1002");
  EXPECT_EQ(id->firmware, "21160001");
  EXPECT_EQ(id->mdts, 5);
  EXPECT_EQ(id->ver, 0x00010400U);
  EXPECT_FALSE(parse_identify_controller(std::vector<std::uint8_t>(4095)).has_value());
}

TEST(AgentNvmeIdentify, TextFieldsAreSanitised) {
  const std::uint8_t poison[4] = {0xA5, 0xA5, 'x', 0};
  EXPECT_EQ(identify_text(poison), "??x");
  EXPECT_EQ(trim_blanks("  S5GXNF0R123456   \n"), "S5GXNF0R123456");
  EXPECT_EQ(trim_blanks("   "), "");
}
