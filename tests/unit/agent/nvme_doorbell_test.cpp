// The doorbell test's controller sequence against a simulated controller (nvme_sim.hpp): the
// full Identify round trip, registers left as found, DSTRD honoured, and every failure named:
// a controller that never becomes ready (the time limit fires), a doorbell that never arrives,
// a wrong serial, a fatal status, BAR0 all-Fs.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "nvme_sim.hpp"

using namespace p2pnode::agent::nvme;
using p2pnode::agent::nvme::test::SimController;
using p2pnode::agent::nvme::test::SimHostWriter;
using namespace std::chrono_literals;

namespace {
// CAP with MQES 2048, CQR, TO 7.5 s, DSTRD 0, CSS NVM, MPSMAX 64 KiB.
constexpr std::uint64_t kCap = 0x0040'0020'0f01'07ffULL;

struct DoorbellRig {
  std::vector<std::uint8_t> mem = std::vector<std::uint8_t>(3 * 4096 + 4096);
  DmaBuffer dma;
  SimController sim;
  DoorbellRig() {
    // A page-aligned window of the vector, at a made-up IOVA.
    auto base = reinterpret_cast<std::uintptr_t>(mem.data());
    auto aligned = (base + 4095) & ~std::uintptr_t{4095};
    dma = DmaBuffer::contiguous(reinterpret_cast<std::uint8_t*>(aligned), 0x0000'0010'0000'0000ULL, 3 * 4096);
    sim.dma = dma;
    sim.cap = kCap;
    // As the VM found the drive after vfio-pci's reset: disabled, not ready, AQA/ASQ/ACQ 0.
    sim.cc = 0;
    sim.csts = 0;
  }
};

DoorbellTiming fast() {
  DoorbellTiming t;
  t.ready_limit = 200ms;
  t.completion_limit = 100ms;
  t.poll = 100us;
  return t;
}
}  // namespace

TEST(AgentNvmeDoorbell, IdentifyRoundTripLeavesRegistersAsFound) {
  DoorbellRig r;
  r.sim.aqa = 0x001f001f;  // whatever was there must come back
  r.sim.asq = 0xabc000;
  r.sim.acq = 0xdef000;
  SimHostWriter w(r.sim);
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", "QEMU NVMe Ctrl"}, fast());
  EXPECT_TRUE(o.passed) << o.step << ": " << o.reason;
  ASSERT_TRUE(o.identify.has_value());
  EXPECT_EQ(o.identify->serial, "P2PVM-A");
  EXPECT_EQ(o.identify->model, "QEMU NVMe Ctrl");
  ASSERT_TRUE(o.completion.has_value());
  EXPECT_EQ(o.completion->cid, kIdentifyCid);
  EXPECT_EQ(o.completion->sq_head, 1);
  EXPECT_EQ(r.sim.identify_commands, 1);
  EXPECT_EQ(r.sim.other_commands, 0);  // never anything but Identify
  // The SQ tail doorbell written once with 1, the CQ head doorbell once with 1 (head after one entry).
  EXPECT_EQ(r.sim.doorbell_writes_at(0x1000), 1U);
  EXPECT_EQ(r.sim.doorbell_writes_at(0x1004), 1U);
  // Left disabled, not ready, and AQA/ASQ/ACQ/CC as found.
  EXPECT_TRUE(o.cc_as_found());
  EXPECT_EQ(r.sim.cc, 0U);
  EXPECT_EQ(r.sim.csts & 1, 0U);
  EXPECT_EQ(r.sim.aqa, 0x001f001fU);
  EXPECT_EQ(r.sim.asq, 0xabc000U);
  EXPECT_EQ(r.sim.acq, 0xdef000U);
  EXPECT_EQ(o.left.csts, o.found.csts);
  ASSERT_TRUE(o.ready_ms.has_value());
  ASSERT_TRUE(o.completion_us.has_value());
  const auto j = to_json(o);
  EXPECT_EQ(j["identify"]["serial"], "P2PVM-A");
  EXPECT_EQ(j["cc_as_found"], true);
  EXPECT_EQ(j["found"]["mqes"], 2048);
}

TEST(AgentNvmeDoorbell, SecondRunTheSame) {
  DoorbellRig r;
  SimHostWriter w(r.sim);
  const auto a = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  const auto b = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  EXPECT_TRUE(a.passed) << a.reason;
  EXPECT_TRUE(b.passed) << b.reason;
  EXPECT_EQ(a.found.cc, b.found.cc);
  EXPECT_EQ(a.left.cc, b.left.cc);
  EXPECT_EQ(a.left.csts, b.left.csts);
  EXPECT_EQ(r.sim.identify_commands, 2);
}

TEST(AgentNvmeDoorbell, FoundEnabledIsDisabledFirstAndLeftDisabled) {
  DoorbellRig r;
  r.sim.cc = 0x00460001;
  r.sim.csts = 1;
  SimHostWriter w(r.sim);
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  EXPECT_TRUE(o.passed) << o.reason;
  EXPECT_TRUE(o.enabled_when_found());
  EXPECT_TRUE(o.disable_ms.has_value());
  EXPECT_EQ(r.sim.cc, 0x00460000U);  // CC as found but EN=0
  EXPECT_EQ(r.sim.csts & 1, 0U);
}

TEST(AgentNvmeDoorbell, DoorbellStrideFromCap) {
  DoorbellRig r;
  r.sim.cap = kCap | (2ULL << 32);  // DSTRD 2: 16-byte stride, CQ0 head at 0x1010
  SimHostWriter w(r.sim);
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  EXPECT_TRUE(o.passed) << o.reason;
  EXPECT_EQ(r.sim.doorbell_writes_at(0x1000), 1U);
  EXPECT_EQ(r.sim.doorbell_writes_at(0x1010), 1U);
  EXPECT_EQ(r.sim.doorbell_writes_at(0x1004), 0U);
}

TEST(AgentNvmeDoorbell, NeverReadyTimesOutAndRestores) {
  DoorbellRig r;
  r.sim.ready_after_reads = -1;  // CSTS.RDY never follows CC.EN (QEMU cannot be made to do this)
  SimHostWriter w(r.sim);
  auto t = fast();
  t.ready_limit = 150ms;
  const auto t0 = std::chrono::steady_clock::now();
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, t);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.step, "enable");
  EXPECT_NE(o.reason.find("CSTS.RDY did not become 1 within 150 ms"), std::string::npos) << o.reason;
  EXPECT_GE(took, 150ms);
  EXPECT_LT(took, 2s);  // the limit, then the disable wait (also bounded), not CAP.TO's 7.5 s
  EXPECT_EQ(r.sim.doorbell_writes_at(0x1000), 0U);  // never rang a controller that is not ready
  EXPECT_EQ(r.sim.cc & 1, 0U);                      // left disabled
  EXPECT_TRUE(o.left_read);
}

TEST(AgentNvmeDoorbell, CapTimeoutBoundsTheWait) {
  // CAP.TO of 500 ms below the caller's 10 s: the deadline is CAP.TO's.
  EXPECT_EQ(ready_deadline(decode_cap(0x01000000ULL), 10000ms), 500ms);
  EXPECT_EQ(ready_deadline(decode_cap(0xff000000ULL), 10000ms), 10000ms);
  EXPECT_EQ(ready_deadline(decode_cap(0), 10000ms), 500ms);  // TO 0: at least 500 ms
}

TEST(AgentNvmeDoorbell, DoorbellThatNeverArrivesIsNamed) {
  DoorbellRig r;
  r.sim.ignore_doorbell = true;
  SimHostWriter w(r.sim);
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.step, "completion");
  EXPECT_NE(o.reason.find("no completion within 100 ms after the host writer rang the doorbell"), std::string::npos)
      << o.reason;
  EXPECT_EQ(r.sim.cc & 1, 0U);
}

TEST(AgentNvmeDoorbell, WrongSerialFails) {
  DoorbellRig r;
  r.sim.serial = "OTHER-DRIVE";
  SimHostWriter w(r.sim);
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.step, "identify");
  EXPECT_NE(o.reason.find("'OTHER-DRIVE'"), std::string::npos);
  EXPECT_TRUE(o.cc_as_found());
}

TEST(AgentNvmeDoorbell, WrongModelFails) {
  DoorbellRig r;
  SimHostWriter w(r.sim);
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", "WDC PC SN530"}, fast());
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.step, "identify");
}

TEST(AgentNvmeDoorbell, ErrorStatusFails) {
  DoorbellRig r;
  r.sim.complete_status = 0x02;
  SimHostWriter w(r.sim);
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.step, "completion");
  EXPECT_NE(o.reason.find("invalid field in command"), std::string::npos);
}

TEST(AgentNvmeDoorbell, FatalStatusOnEnable) {
  DoorbellRig r;
  r.sim.fatal_on_enable = true;
  SimHostWriter w(r.sim);
  auto t = fast();
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, t);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.step, "enable");
  EXPECT_NE(o.reason.find("controller fatal status"), std::string::npos) << o.reason;
  EXPECT_EQ(r.sim.doorbell_writes_at(0x1000), 0U);
  // CFS without RDY: the same.
  SimController s2;
  s2.cap = kCap;
  s2.csts = 2;  // CFS already set, never ready
  s2.ready_after_reads = -1;
  s2.dma = r.dma;
  SimHostWriter w2(s2);
  const auto o2 = run_identify_doorbell(s2, r.dma, w2, {"P2PVM-A", ""}, t);
  EXPECT_FALSE(o2.passed);
  EXPECT_EQ(o2.step, "enable");
  EXPECT_NE(o2.reason.find("fatal"), std::string::npos) << o2.reason;
}

TEST(AgentNvmeDoorbell, AllFsTouchesNothing) {
  DoorbellRig r;
  r.sim.cap = ~0ULL;
  r.sim.vs = 0xFFFFFFFF;
  r.sim.csts = 0xFFFFFFFF;
  SimHostWriter w(r.sim);
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.step, "check");
  EXPECT_NE(o.reason.find("all-Fs"), std::string::npos);
  EXPECT_TRUE(r.sim.writes.empty());
}

TEST(AgentNvmeDoorbell, ScatteredPagesAsInNoiommuMode) {
  DoorbellRig r;
  // Physical pages out of order, as /proc/self/pagemap gives them in noiommu mode.
  r.dma.pages = {0x7'0000'3000ULL, 0x7'0000'1000ULL, 0x5'0000'8000ULL};
  r.sim.dma = r.dma;
  SimHostWriter w(r.sim);
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  EXPECT_TRUE(o.passed) << o.reason;
  EXPECT_EQ(o.left.asq, 0U);
  EXPECT_EQ(r.sim.identify_commands, 1);
  r.dma.pages = {0x1000, 0};
  const auto bad = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  EXPECT_EQ(bad.step, "check");
}

TEST(AgentNvmeDoorbell, DriveLeftShutDownByTheNvmeDriverWithoutAReset) {
  // A drive whose function VFIO cannot reset (no FLR) is found as Linux's nvme driver left it:
  // CC 0x00464061 (EN=1, SHN normal), CSTS 0x9 (RDY, shutdown complete), as recorded in the VM.
  DoorbellRig r;
  r.sim.cap = 0x004018200f0107ffULL;  // QEMU's CAP, recorded
  r.sim.cc = 0x00464061;
  r.sim.csts = 0x9;
  r.sim.aqa = 0x001f001f;
  SimHostWriter w(r.sim);
  const auto o = run_identify_doorbell(r.sim, r.dma, w, {"P2PVM-A", ""}, fast());
  EXPECT_TRUE(o.passed) << o.reason;
  EXPECT_TRUE(o.enabled_when_found());
  EXPECT_EQ(r.sim.cc, 0x00464060U);  // CC as found, EN=0: left disabled
  EXPECT_EQ(r.sim.csts & 1, 0U);
  EXPECT_EQ(r.sim.aqa, 0x001f001fU);
  EXPECT_TRUE(o.cc_as_found());
}
