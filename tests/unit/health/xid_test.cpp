// The Xid parser on lines from public reports (each test names where the line was posted) and on
// the /dev/kmsg record format; the table's entries for the Xids that matter to P2P.
#include "health/xid.hpp"

#include <gtest/gtest.h>

using namespace p2pnode;
using namespace p2pnode::health;

TEST(XidParse, FallenOffTheBusJournalLine) {
  // NVIDIA/open-gpu-kernel-modules issue 1151 (RTX 5080, journalctl -k).
  auto e = parse_xid_line("May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->bdf, "0000:2b:00.0");
  EXPECT_EQ(e->xid, 79);
  EXPECT_FALSE(e->pid);
  EXPECT_EQ(e->message, "GPU has fallen off the bus.");
  EXPECT_FALSE(e->seq);
}

TEST(XidParse, PidAndNameAreSplitOff) {
  // leptonai/gpud pull request 500 (an H100 box's dmesg).
  auto e = parse_xid_line(
      "NVRM: Xid (PCI:0000:9b:00): 119, pid=4071838, name=python, Timeout after 45s of waiting for RPC response from "
      "GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801702 0x4).");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->bdf, "0000:9b:00.0");
  EXPECT_EQ(e->xid, 119);
  ASSERT_TRUE(e->pid);
  EXPECT_EQ(*e->pid, 4071838);
  EXPECT_EQ(e->process, "python");
  EXPECT_EQ(e->message.rfind("Timeout after 45s", 0), 0u) << e->message;
}

TEST(XidParse, RowRemapperLineWithPidOnly) {
  // stas00/ml-engineering, compute/accelerator/nvidia/debug.md.
  auto e = parse_xid_line("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->bdf, "0000:10:1c.0");
  EXPECT_EQ(e->xid, 63);
  EXPECT_EQ(*e->pid, 1896);
  EXPECT_EQ(e->message, "Row Remapper: New row marked for remapping, reset gpu to activate.");
}

TEST(XidParse, UnknownPidAndDmesgTimestamp) {
  // leptonai/gpud pull request 46 (dmesg --ctime).
  auto e = parse_xid_line(
      "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp "
      "Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->xid, 13);
  EXPECT_FALSE(e->pid);
  EXPECT_EQ(e->process, "<unknown>");
  EXPECT_EQ(e->message.rfind("Graphics SM Warp Exception", 0), 0u);
}

TEST(XidParse, NvlinkFiveLineWithDomain) {
  // leptonai/gpud pull request 1174 (a GB200 box: PCI domain 0018).
  auto e = parse_xid_line(
      "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 "
      "0x00100000 0x00000004)");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->bdf, "0018:01:00.0");
  EXPECT_EQ(e->xid, 145);
  EXPECT_EQ(find_xid(145)->area, std::string("nvlink"));
}

TEST(XidParse, OldFormatWithoutPciPrefix) {
  // pastebin xJaypMZt (an older driver: "Xid (0000:01:00)").
  auto e = parse_xid_line("Jan 18 11:38:05 localhost kernel: [ 269.517039] NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007 M 00001ffc Data ffffffff");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->bdf, "0000:01:00.0");
  EXPECT_EQ(e->xid, 3);
  EXPECT_EQ(find_xid(3), nullptr);  // not in the table: reported as a warning with the catalog's pointer
}

// The record format of Documentation/ABI/testing/dev-kmsg around a message in the driver's Xid shape.
TEST(XidParse, KmsgRecordCarriesSequenceAndTime) {
  auto e = parse_xid_line("3,2351,5123456789,-;NVRM: Xid (PCI:0000:18:00): 74, pid=2211, name=all_reduce_perf, NVLink: fatal error detected on link 3\n SUBSYSTEM=pci\n DEVICE=+pci:0000:18:00.0");
  ASSERT_TRUE(e);
  EXPECT_EQ(*e->seq, 2351u);
  EXPECT_EQ(*e->ts_us, 5123456789u);
  EXPECT_EQ(e->xid, 74);
  EXPECT_EQ(e->bdf, "0000:18:00.0");
  EXPECT_EQ(e->process, "all_reduce_perf");
  EXPECT_EQ(e->message, "NVLink: fatal error detected on link 3");
}

TEST(XidParse, NotXidLines) {
  EXPECT_FALSE(parse_xid_line("NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus."));
  EXPECT_FALSE(parse_xid_line("6,1,0,-;Command line: console=ttyS0"));
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (43, pid: 5678): ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR"));  // not a driver shape
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:0000:2b:00): x, text"));
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:0000:2b:00) 79, no colon"));
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:zz:2b:00): 79, bad bus id"));
  EXPECT_FALSE(parse_xid_line(""));
}

TEST(KmsgRecord, Prefix) {
  auto r = parse_kmsg_record("6,339,5140900,-,caller=T1;NET: Registered protocol family 10\n SUBSYSTEM=net");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->priority, 6);
  EXPECT_EQ(r->seq, 339u);
  EXPECT_EQ(r->ts_us, 5140900u);
  EXPECT_EQ(r->message, "NET: Registered protocol family 10");
  EXPECT_FALSE(parse_kmsg_record("no semicolon"));
  EXPECT_FALSE(parse_kmsg_record("a,b,c;x"));
}

TEST(XidTable, TheXidsThatMatterToP2P) {
  for (int x : {74, 79, 48, 63, 64, 94, 95, 119, 120, 31}) ASSERT_NE(find_xid(x), nullptr) << x;
  EXPECT_EQ(find_xid(79)->severity, Severity::error);
  EXPECT_STREQ(find_xid(79)->area, "bus");
  EXPECT_EQ(find_xid(74)->severity, Severity::error);
  EXPECT_STREQ(find_xid(74)->area, "nvlink");
  EXPECT_EQ(find_xid(94)->severity, Severity::warning);  // contained: the app restarts, the GPU stays
  EXPECT_EQ(find_xid(95)->severity, Severity::error);
  int last = 0;
  for (const auto& i : xid_table()) {
    EXPECT_GT(i.xid, last) << "the table is sorted and has no duplicates";
    last = i.xid;
    EXPECT_NE(std::string(i.summary), "");
    EXPECT_NE(std::string(i.action), "");
  }
}
