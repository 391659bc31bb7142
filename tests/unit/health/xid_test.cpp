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
  auto e = parse_xid_line(
      "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.");
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
      "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 "
      "0x00000000 "
      "0x00100000 0x00000004)");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->bdf, "0018:01:00.0");
  EXPECT_EQ(e->xid, 145);
  EXPECT_EQ(find_xid(145)->area, std::string("nvlink"));
}

TEST(XidParse, OldFormatWithoutPciPrefix) {
  // pastebin xJaypMZt (an older driver: "Xid (0000:01:00)").
  auto e = parse_xid_line(
      "Jan 18 11:38:05 localhost kernel: [ 269.517039] NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007 M 00001ffc "
      "Data ffffffff");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->bdf, "0000:01:00.0");
  EXPECT_EQ(e->xid, 3);
  EXPECT_EQ(find_xid(3), nullptr);  // not in the table: reported as a warning with the catalog's pointer
}

// The record format of Documentation/ABI/testing/dev-kmsg around a message in the driver's Xid shape.
TEST(XidParse, KmsgRecordCarriesSequenceAndTime) {
  auto e = parse_xid_line(
      "3,2351,5123456789,-;NVRM: Xid (PCI:0000:18:00): 74, pid=2211, name=all_reduce_perf, NVLink: fatal error "
      "detected on link 3\n SUBSYSTEM=pci\n DEVICE=+pci:0000:18:00.0");
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
  EXPECT_FALSE(
      parse_xid_line("NVRM: Xid (43, pid: 5678): ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR"));  // not a driver shape
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
  for (int x : {74, 79, 48, 63, 64, 94, 95, 119, 120, 31}) { ASSERT_NE(find_xid(x), nullptr) << x; }
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

// The driver's words only. The kernel's segfault report names the faulting file, which
// any local user chooses (arch/x86/mm/fault.c show_signal_msg: "%s[%d]: segfault at … in %s[…]"),
// and a process may write any text to /dev/kmsg (facility "user" unless it names another; printk
// never lets it take the kernel's, 0). Neither is the driver's Xid; the driver's own line is.
namespace {
constexpr const char* kXidText = "NVRM: Xid (PCI:0000:b3:00): 79, pid=1, name=x, GPU has fallen off the bus.";
}

TEST(XidDriverWordsOnly, SegfaultReportNamingAFileWithXidText) {
  const std::string rec = std::string(
                              "6,5001,812345678,-;a.out[4242]: segfault at 0 ip 000055d4c1e0113d sp 00007ffd1b7a8f40 "
                              "error 4 in ") +
                          kXidText + "[55d4c1e01000+1000] likely on CPU 3 (core 3, socket 0)";
  EXPECT_FALSE(parse_xid_line(rec));
  // The same report as the journal and dmesg print it.
  EXPECT_FALSE(parse_xid_line(
      std::string("Nov 27 07:00:01 gpu-1 kernel: a.out[4242]: segfault at 0 ip 0 sp 0 error 4 in ") + kXidText));
  EXPECT_FALSE(
      parse_xid_line(std::string("[  512.000001] a[1]: segfault at 0 ip 0 sp 0 error 4 in kernel: ") + kXidText));
  // A process name carrying the text (comm is at most 15 bytes, but a line may quote anything).
  EXPECT_FALSE(parse_xid_line(std::string("4,5002,812345679,-;Out of memory: Killed process 77 (") + kXidText + ")"));
}

TEST(XidDriverWordsOnly, UserFacilityRecordIsNotTheDrivers) {
  // echo '<4>NVRM: Xid …' > /dev/kmsg: user.warning, PRI 1*8+4 = 12; and a daemon's facility (3*8+3).
  EXPECT_FALSE(parse_xid_line(std::string("12,5003,812345680,-;") + kXidText));
  EXPECT_FALSE(parse_xid_line(std::string("27,5004,812345681,-;") + kXidText));
  auto r = parse_kmsg_record(std::string("12,5003,812345680,-;") + kXidText);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->facility(), 1);
  EXPECT_EQ(r->priority & 7, 4);
}

TEST(XidDriverWordsOnly, TheDriversOwnRecordIsAnXid) {
  auto e = parse_xid_line(std::string("4,5005,812345682,-;") + kXidText);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->bdf, "0000:b3:00.0");
  EXPECT_EQ(e->xid, 79);
  EXPECT_EQ(*e->seq, 5005u);
}

TEST(KernelText, StripsOnlyTheKernelsPrefixes) {
  EXPECT_EQ(kernel_text("May 18 19:02:39 host kernel: NVRM: x")->text, "NVRM: x");
  EXPECT_EQ(kernel_text("2026-11-27T07:00:00+0000 host kernel: [ 1.5] NVRM: x")->text, "NVRM: x");
  EXPECT_EQ(kernel_text("[Fri Aug 30 11:43:09 2024] NVRM: x")->text, "NVRM: x");
  EXPECT_EQ(kernel_text("   NVRM: x")->text, "NVRM: x");
  // A process's journal line keeps its identifier: not the kernel's text.
  EXPECT_EQ(kernel_text("May 18 19:02:39 host app[12]: kernel: NVRM: x")->text,
            "May 18 19:02:39 host app[12]: kernel: NVRM: x");
  EXPECT_FALSE(kernel_text("14,1,2,-;NVRM: x"));
  EXPECT_EQ(kernel_text("3,1,2,-;NVRM: x\n SUBSYSTEM=pci")->text, "NVRM: x");
}
