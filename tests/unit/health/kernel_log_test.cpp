// The kernel log's reports that are not Xids, on the shapes they take in the field, and what the
// monitor makes of them.
#include "health/kernel_log.hpp"

#include <gtest/gtest.h>

#include "health/monitor.hpp"

using namespace p2pnode;
using namespace p2pnode::health;

namespace {
std::vector<KernelEvent> feed_all(const std::vector<std::string>& lines) {
  KernelLogParser p;
  std::vector<KernelEvent> out;
  for (const auto& l : lines) {
    if (auto e = p.feed(l)) { out.push_back(*e); }
  }
  return out;
}
}  // namespace

// A 570 driver's report as dmesg prints one record with embedded newlines (NVIDIA/NVSentinel
// issue 155, driver 570.158.01): the continuation lines indented, no Xid number.
TEST(KernelLog, FallenOffTheBusAsDmesgPrintsIt) {
  const auto ev = feed_all({"[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0",
                            "               NVRM: (PCI ID: 10de:26b5) installed in this system has",
                            "               NVRM: fallen off the bus and is not responding to commands.",
                            "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s)."});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, "fallen_off_bus");
  EXPECT_EQ(ev[0].bdf, "0000:b3:00.0");
  EXPECT_EQ(ev[0].detail, "PCI ID 10de:26b5");
  EXPECT_NE(ev[0].message.find("fallen off the bus"), std::string::npos);
}

// The same report as separate journal lines (leptonai/gpud pull request 1209: `journalctl -k`).
TEST(KernelLog, FallenOffTheBusAsSeparateJournalLines) {
  const auto ev =
      feed_all({"Feb 14 05:03:52 node-1 kernel: NVRM: The NVIDIA GPU 0000:2a:00.0",
                "Feb 14 05:03:52 node-1 kernel: NVRM: (PCI ID: 10de:2335) installed in this system has",
                "Feb 14 05:03:52 node-1 kernel: NVRM: fallen off the bus and is not responding to commands."});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].bdf, "0000:2a:00.0");
  EXPECT_EQ(ev[0].detail, "PCI ID 10de:2335");
}

// /dev/kmsg: one record, its newlines escaped as \x0a (Documentation/ABI/testing/dev-kmsg), and
// the three lines as three records; the sequence number and time of the first are kept.
TEST(KernelLog, FallenOffTheBusAsKmsgRecords) {
  auto ev =
      feed_all({"3,18204,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: (PCI ID: 10de:26b5) installed in "
                "this system has\\x0aNVRM: fallen off the bus and is not responding to commands.\n SUBSYSTEM=pci\n"});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].bdf, "0000:b3:00.0");
  EXPECT_EQ(*ev[0].seq, 18204u);
  EXPECT_EQ(*ev[0].ts_us, 1843308145u);
  ev = feed_all({"3,18204,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0",
                 "3,18205,1843308150,c;NVRM: (PCI ID: 10de:26b5) installed in this system has",
                 "3,18206,1843308152,c;NVRM: fallen off the bus and is not responding to commands."});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(*ev[0].seq, 18204u);
  // A head without its end (another message came between) is dropped, not reported.
  EXPECT_TRUE(feed_all({"NVRM: The NVIDIA GPU 0000:b3:00.0", "NVRM: something else", "usb 1-1: new device", "eth0: up",
                        "nvme nvme0: ready"})
                  .empty());
}

// The driver's older one-line form (Bumblebee-Project/Bumblebee issue 554).
TEST(KernelLog, FallenOffTheBusOlderForm) {
  const auto ev = feed_all({"[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus."});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].bdf, "0000:01:00.0");
}

// The kernel's own AER report (drivers/pci/pcie/aer.c: "PCIe Bus Error: severity=%s, type=%s,
// (%s)"; "Corrected"/"Uncorrected (Non-Fatal)" before 6.0, "Correctable"/"Uncorrectable" after),
// naming the device that saw the error; the lines around it (the port's "error message received",
// the status mask, the bits) are not events of their own.
TEST(KernelLog, AerReportsNameTheDevice) {
  const auto ev = feed_all(
      {"pcieport 0000:00:01.1: AER: Corrected error message received from 0000:01:00.0",
       "nvidia 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
       "nvidia 0000:01:00.0:   device [10de:2684] error status/mask=00000001/0000e000",
       "nvidia 0000:01:00.0:    [ 0] RxErr                  (First)",
       "pcieport 0000:40:01.1: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Requester "
       "ID)",
       "nvidia 0000:41:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Inaccessible, (Unregistered Agent ID)",
       "nvme 0000:81:00.0: PCIe Bus Error: severity=Correctable, type=Data Link Layer, (Transmitter ID)"});
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].bdf, "0000:01:00.0");
  EXPECT_EQ(ev[0].aer_class, "correctable");
  EXPECT_EQ(ev[0].detail, "type=Physical Layer, (Receiver ID)");
  EXPECT_EQ(ev[1].bdf, "0000:40:01.1");
  EXPECT_EQ(ev[1].aer_class, "nonfatal");
  EXPECT_EQ(ev[2].aer_class, "fatal");
  EXPECT_EQ(ev[3].bdf, "0000:81:00.0");
  EXPECT_EQ(ev[3].aer_class, "correctable");
  // Xid lines are the Xid parser's, not events here.
  EXPECT_TRUE(feed_all({"NVRM: Xid (PCI:0000:2b:00): 79, pid=1896, GPU has fallen off the bus."}).empty());
}

TEST(KernelLog, TheMonitorNamesTheDeviceAndItsPairs) {
  HealthMonitor m(600);
  const PathIndex paths =
      index_paths({{"0000:03:00.0", "gpu", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}, "pci0000:00", 0},
                   {"0000:04:00.0", "gpu", {"0000:00:01.0", "0000:01:00.0", "0000:02:01.0"}, "pci0000:00", 0}});
  HealthSample s;
  s.xid.source = "/dev/kmsg";
  s.xid.uptime_s = 1000;
  KernelLogParser p;
  for (const char* l :
       {"6,100,990000000,-;NVRM: The NVIDIA GPU 0000:03:00.0\\x0aNVRM: (PCI ID: 10de:2335) installed in "
        "this system has\\x0aNVRM: fallen off the bus and is not responding to commands.",
        "4,101,995000000,-;pcieport 0000:02:01.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), "
        "type=Transaction Layer, (Requester ID)",
        "4,102,996000000,-;pcieport 0000:02:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver "
        "ID)"}) {
    if (auto e = p.feed(l)) { s.xid.kernel_events.push_back(*e); }
  }
  ASSERT_EQ(s.xid.kernel_events.size(), 3u);
  m.update(s, paths);
  const Finding *fell = nullptr, *aer = nullptr;
  for (const auto& f : m.findings()) {
    if (f.check == "health.kernel") { (f.subject == "0000:03:00.0" ? fell : aer) = &f; }
  }
  ASSERT_TRUE(fell && aer);
  EXPECT_EQ(fell->severity, Severity::error);
  EXPECT_NE(
      fell->summary.find("GPU 0000:03:00.0 has fallen off the bus and is not responding (the driver's report, no Xid "
                         "number, PCI ID 10de:2335) in the last 10m; on P2P paths: 0000:03:00.0-0000:04:00.0"),
      std::string::npos)
      << fell->summary;
  EXPECT_EQ(aer->severity, Severity::error);
  EXPECT_NE(aer->summary.find("1 nonfatal PCIe AER error on bridge 0000:02:01.0"), std::string::npos) << aer->summary;
  // One correctable report is what healthy links show (the limit is 8 a minute): listed, no finding.
  for (const auto& f : m.findings()) { EXPECT_NE(f.subject, "0000:02:00.0") << f.summary; }
  EXPECT_EQ(m.view()["xid"]["kernel"].size(), 3u);
  // The same records read again (a reopen) are not counted twice; 20 minutes later they are gone.
  m.update(s, paths);
  EXPECT_EQ(m.view()["xid"]["kernel"].size(), 3u);
  s.xid.kernel_events.clear();
  s.xid.uptime_s = 2200;
  m.update(s, paths);
  for (const auto& f : m.findings()) { EXPECT_NE(f.check, "health.kernel"); }
}

// The driver's words only: a segfault report whose file name carries the fall-off or AER
// text (with an escaped newline too), and user-facility records with the same text, give no event;
// the driver's and the kernel's own records do.
TEST(KernelLogDriverWordsOnly, QuotedAndUserTextIsNotAnEvent) {
  EXPECT_TRUE(
      feed_all({"6,7001,900000000,-;a.out[4242]: segfault at 0 ip 0 sp 0 error 4 in NVRM: GPU at 0000:01:00.0 has "
                "fallen off the bus.[55d4c1e01000+1000]",
                "6,7002,900000001,-;a.out[4243]: segfault at 0 ip 0 sp 0 error 4 in x\\x0aNVRM: GPU at 0000:01:00.0 "
                "has fallen off the bus.[55d4c1e01000+1000]",
                "6,7003,900000002,-;a.out[4244]: segfault at 0 ip 0 sp 0 error 4 in x\\x0aNVRM: The NVIDIA GPU "
                "0000:b3:00.0\\x0aNVRM: (PCI ID: 10de:26b5) installed in this system has\\x0aNVRM: fallen off the "
                "bus and is not responding to commands.",
                "6,7004,900000003,-;a.out[4245]: segfault at 0 ip 0 sp 0 error 4 in nvidia 0000:01:00.0: PCIe Bus "
                "Error: severity=Uncorrectable (Fatal), type=Inaccessible, (Unregistered Agent ID)[7f+1000]",
                "12,7005,900000004,-;NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
                "14,7006,900000005,-;nvidia 0000:01:00.0: PCIe Bus Error: severity=Uncorrectable (Fatal), "
                "type=Inaccessible, (Unregistered Agent ID)",
                "Nov 27 07:00:01 gpu-1 kernel: a.out[4242]: segfault at 0 ip 0 sp 0 error 4 in NVRM: GPU at "
                "0000:01:00.0 has fallen off the bus."})
          .empty());
  // A user record cannot finish a report the driver began either.
  EXPECT_TRUE(feed_all({"3,7010,900000010,-;NVRM: The NVIDIA GPU 0000:b3:00.0",
                        "11,7011,900000011,-;NVRM: (PCI ID: 10de:26b5) installed in this system has",
                        "11,7012,900000012,-;NVRM: fallen off the bus and is not responding to commands."})
                  .empty());
  const auto ev = feed_all({"3,7020,900000020,-;NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
                            "3,7021,900000021,-;nvidia 0000:01:00.0: PCIe Bus Error: severity=Uncorrectable (Fatal), "
                            "type=Inaccessible, (Unregistered Agent ID)"});
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, "fallen_off_bus");
  EXPECT_EQ(ev[1].aer_class, "fatal");
  // With the AER code's own "AER: " prefix after the device, as newer kernels print it.
  const auto aer =
      feed_all({"3,7030,900000030,-;pcieport 0000:00:1c.5: AER: PCIe Bus Error: severity=Correctable, "
                "type=Physical Layer, (Receiver ID)"});
  ASSERT_EQ(aer.size(), 1u);
  EXPECT_EQ(aer[0].bdf, "0000:00:1c.5");
  EXPECT_EQ(aer[0].aer_class, "correctable");
}
