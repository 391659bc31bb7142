#include "p2pnode/agent/nvme/doorbell_test.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

namespace p2pnode::agent::nvme {
namespace {
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string fmt_ms(double ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f ms", ms);
  return b;
}

// Reads a completion entry from memory the device writes: volatile, byte by byte.
std::array<std::uint8_t, kCqEntryBytes> read_cq_entry(const DmaBuffer& dma, std::size_t offset) {
  std::array<std::uint8_t, kCqEntryBytes> e{};
  const volatile std::uint8_t* p = dma.host + offset;
  std::atomic_thread_fence(std::memory_order_acquire);
  for (std::size_t i = 0; i < e.size(); ++i) { e[i] = p[i]; }
  return e;
}
}  // namespace

RegisterSnapshot read_snapshot(RegisterFile& bar) {
  RegisterSnapshot s;
  s.cap = bar.read64(kRegCap);
  s.vs = bar.read32(kRegVs);
  s.cc = bar.read32(kRegCc);
  s.csts = bar.read32(kRegCsts);
  s.aqa = bar.read32(kRegAqa);
  s.asq = bar.read64(kRegAsq);
  s.acq = bar.read64(kRegAcq);
  return s;
}

nlohmann::json to_json(const RegisterSnapshot& s) {
  const Cap cap = decode_cap(s.cap);
  const Csts csts = decode_csts(s.csts);
  const Cc cc = decode_cc(s.cc);
  return {{"cap", hex64(s.cap)},
          {"vs", hex32(s.vs)},
          {"version", decode_vs(s.vs).text()},
          {"cc", hex32(s.cc)},
          {"csts", hex32(s.csts)},
          {"aqa", hex32(s.aqa)},
          {"asq", hex64(s.asq)},
          {"acq", hex64(s.acq)},
          {"enabled", cc.en},
          {"ready", csts.rdy},
          {"fatal", csts.cfs},
          {"mqes", cap.mqes},
          {"dstrd", cap.dstrd},
          {"doorbell_stride_bytes", cap.doorbell_stride_bytes()},
          {"timeout_ms", cap.timeout_ms},
          {"css", cap.css}};
}

std::string registers_problem(const RegisterSnapshot& s) {
  if (s.cap == ~std::uint64_t{0} && s.vs == 0xFFFFFFFFu) {
    return "BAR0 reads all-Fs (CAP " + hex64(s.cap) + "): the controller is asleep (D3) or gone from the bus";
  }
  if (s.csts == 0xFFFFFFFFu) { return "CSTS reads all-Fs: the controller does not answer"; }
  const auto v = decode_vs(s.vs);
  if (v.major < 1 || v.major > 2) { return "VS " + hex32(s.vs) + " is not an NVMe version (expected 1.x or 2.x)"; }
  if (s.cap == 0) { return "CAP reads 0: BAR0 is not an NVMe register block"; }
  return {};
}

std::chrono::milliseconds ready_deadline(const Cap& cap, std::chrono::milliseconds limit) {
  const std::chrono::milliseconds to{std::max(cap.timeout_ms, 500)};
  return std::min(to, limit);
}

WaitResult wait_ready(RegisterFile& bar, bool ready, std::chrono::milliseconds limit, std::chrono::microseconds poll) {
  WaitResult w;
  const auto t0 = Clock::now();
  const auto deadline = t0 + limit;
  while (true) {
    w.csts = bar.read32(kRegCsts);
    w.elapsed_ms = ms_since(t0);
    if (w.csts == 0xFFFFFFFFu) {
      w.why =
          "CSTS reads all-Fs while waiting for RDY=" + std::to_string(ready ? 1 : 0) + ": the controller left the bus";
      return w;
    }
    const Csts c = decode_csts(w.csts);
    if (c.cfs && ready) {  // fatal: a RDY that comes with it is no use
      w.why = "controller fatal status (CSTS " + hex32(w.csts) + ") while waiting for RDY=1";
      return w;
    }
    if (c.rdy == ready) {
      w.ok = true;
      return w;
    }
    if (Clock::now() >= deadline) {
      w.why = "CSTS.RDY did not become " + std::to_string(ready ? 1 : 0) + " within " + std::to_string(limit.count()) +
              " ms (CSTS " + hex32(w.csts) + ")";
      return w;
    }
    std::this_thread::sleep_for(poll);
  }
}

nlohmann::json to_json(const DoorbellOutcome& o) {
  nlohmann::json j{{"passed", o.passed}, {"log", o.log}};
  if (!o.passed) {
    j["step"] = o.step;
    j["reason"] = o.reason;
  }
  if (o.found_read) { j["found"] = to_json(o.found); }
  if (o.left_read) { j["left"] = to_json(o.left); }
  if (o.found_read && o.left_read) {
    j["cc_as_found"] = o.cc_as_found();
    j["csts_as_found"] = o.left.csts == o.found.csts;
    j["enabled_when_found"] = o.enabled_when_found();
  }
  if (o.identify) {
    j["identify"] = {{"serial", o.identify->serial},
                     {"model", o.identify->model},
                     {"firmware", o.identify->firmware},
                     {"vid", o.identify->vid},
                     {"version", decode_vs(o.identify->ver).text()}};
  }
  if (o.completion) {
    j["completion"] = {{"cid", o.completion->cid},
                       {"sq_head", o.completion->sq_head},
                       {"sq_id", o.completion->sq_id},
                       {"status", o.completion->status_text()}};
  }
  if (o.disable_ms) { j["disable_ms"] = *o.disable_ms; }
  if (o.ready_ms) { j["ready_ms"] = *o.ready_ms; }
  if (o.completion_us) { j["completion_us"] = *o.completion_us; }
  return j;
}

namespace {

// One run of the Identify doorbell test: what it was given, and what the steps hand on.
struct IdentifyDoorbellRun {
  RegisterFile& bar;
  const DmaBuffer& dma;
  DoorbellWriter& writer;
  const Expected& expected;
  const DoorbellTiming& timing;
  const AdminLayout& layout;
  DoorbellOutcome& o;
  Cap cap{};
  EnableConfig ec{};
  std::chrono::milliseconds deadline{};  // for CSTS.RDY
  Clock::time_point t_ring{};            // when the writer rang
};

void fail_doorbell_step(DoorbellOutcome& o, std::string step, std::string reason) {
  o.passed = false;
  o.step = std::move(step);
  o.reason = std::move(reason);
  o.log.push_back(o.step + ": " + o.reason);
}

// 1. What is there, before anything is written. False: the controller is not fit (nothing changed).
bool check_found_controller(IdentifyDoorbellRun& run) {
  DoorbellOutcome& o = run.o;
  o.found = read_snapshot(run.bar);
  o.found_read = true;
  if (auto p = registers_problem(o.found); !p.empty()) {
    fail_doorbell_step(o, "check", p);
    return false;
  }
  run.cap = decode_cap(o.found.cap);
  const Cap& cap = run.cap;
  o.log.push_back("found: NVMe " + decode_vs(o.found.vs).text() + ", CAP " + hex64(o.found.cap) + " (MQES " +
                  std::to_string(cap.mqes) + ", DSTRD " + std::to_string(cap.dstrd) + ", TO " +
                  std::to_string(cap.timeout_ms) + " ms), CC " + hex32(o.found.cc) + ", CSTS " + hex32(o.found.csts));
  run.ec = enable_config(cap);
  if (!run.ec.why_not.empty()) {
    fail_doorbell_step(o, "check", run.ec.why_not);
    return false;
  }
  if (auto p = check_layout(run.layout, cap.mqes); !p.empty()) {
    fail_doorbell_step(o, "check", p);
    return false;
  }
  const DmaBuffer& dma = run.dma;
  bool pages_ok = dma.pages.size() * 4096 >= run.layout.total_bytes;
  for (auto a : dma.pages) { pages_ok = pages_ok && a % 4096 == 0 && a != 0; }
  if (dma.host == nullptr || dma.bytes < run.layout.total_bytes || !pages_ok) {
    fail_doorbell_step(o, "check",
                       "the DMA buffer is missing, shorter than " + std::to_string(run.layout.total_bytes) +
                           " bytes, or a page has no 4 KiB aligned device address");
    return false;
  }
  run.deadline = ready_deadline(cap, run.timing.ready_limit);
  return true;
}

// 8. Leave it disabled, registers as found: the end of every path once the controller was changed.
void restore_controller(IdentifyDoorbellRun& run) {
  RegisterFile& bar = run.bar;
  DoorbellOutcome& o = run.o;
  if (decode_cc(bar.read32(kRegCc)).en || decode_csts(bar.read32(kRegCsts)).rdy) {
    bar.write32(kRegCc, bar.read32(kRegCc) & ~1U);
    const auto w = wait_ready(bar, false, run.deadline, run.timing.poll);
    o.log.push_back(w.ok ? "disabled again in " + fmt_ms(w.elapsed_ms) : "restore: " + w.why);
    if (!w.ok && o.passed) { fail_doorbell_step(o, "restore", w.why); }
  }
  bar.write32(kRegAqa, o.found.aqa);
  bar.write64(kRegAsq, o.found.asq);
  bar.write64(kRegAcq, o.found.acq);
  if (bar.read32(kRegCc) != (o.found.cc & ~1U)) { bar.write32(kRegCc, o.found.cc & ~1U); }
  o.left = read_snapshot(bar);
  o.left_read = true;
  o.log.push_back("left: CC " + hex32(o.left.cc) + ", CSTS " + hex32(o.left.csts) + ", AQA " + hex32(o.left.aqa));
  if (o.passed && !o.cc_as_found()) {
    fail_doorbell_step(o, "restore", "CC reads " + hex32(o.left.cc) + " after restoring " + hex32(o.found.cc & ~1U));
  }
}

// 2. Disable (a controller reset) and wait for RDY=0.
bool disable_controller(IdentifyDoorbellRun& run) {
  DoorbellOutcome& o = run.o;
  const Cc cc = decode_cc(o.found.cc);
  const Csts cs = decode_csts(o.found.csts);
  if (cc.en) {
    o.log.push_back("the controller was enabled (CC.EN=1): disabling it; it will be left disabled");
    run.bar.write32(kRegCc, o.found.cc & ~1U);
  }
  if (cc.en || cs.rdy) {
    const auto w = wait_ready(run.bar, false, run.deadline, run.timing.poll);
    o.disable_ms = w.elapsed_ms;
    if (!w.ok) {
      fail_doorbell_step(o, "disable", w.why);
      return false;
    }
    o.log.push_back("disabled in " + fmt_ms(w.elapsed_ms));
  }
  return true;
}

// 3. Admin queues in host memory: zeroed CQ (phase 0), the Identify command in SQ slot 0, a
//    poisoned data page (so stale bytes cannot pass for the controller's answer).
bool set_up_admin_queues(IdentifyDoorbellRun& run) {
  RegisterFile& bar = run.bar;
  const DmaBuffer& dma = run.dma;
  const AdminLayout& layout = run.layout;
  std::memset(dma.host, 0, layout.total_bytes);
  std::memset(dma.host + layout.identify_offset, 0xA5, kIdentifyBytes);
  const SubmissionEntry cmd = identify_controller(kIdentifyCid, dma.iova(layout.identify_offset));
  cmd.store(std::span<std::uint8_t, kSqEntryBytes>(dma.host + layout.sq_offset, kSqEntryBytes));
  bar.write32(kRegAqa, encode_aqa(layout.sq_entries, layout.cq_entries));
  bar.write64(kRegAsq, dma.iova(layout.sq_offset));
  bar.write64(kRegAcq, dma.iova(layout.cq_offset));
  if (bar.read64(kRegAsq) != dma.iova(layout.sq_offset) || bar.read64(kRegAcq) != dma.iova(layout.cq_offset)) {
    fail_doorbell_step(run.o, "setup",
                       "ASQ/ACQ read back " + hex64(bar.read64(kRegAsq)) + "/" + hex64(bar.read64(kRegAcq)) +
                           " after writing " + hex64(dma.iova(layout.sq_offset)) + "/" +
                           hex64(dma.iova(layout.cq_offset)));
    return false;
  }
  run.o.log.push_back("admin queues: SQ at IOVA " + hex64(dma.iova(layout.sq_offset)) + ", CQ at " +
                      hex64(dma.iova(layout.cq_offset)) + ", " + std::to_string(layout.sq_entries) + " entries each");
  return true;
}

// 4. Enable and wait for RDY=1.
bool enable_controller(IdentifyDoorbellRun& run) {
  run.bar.write32(kRegCc, run.ec.cc);
  const auto w = wait_ready(run.bar, true, run.deadline, run.timing.poll);
  run.o.ready_ms = w.elapsed_ms;
  if (!w.ok) {
    fail_doorbell_step(run.o, "enable", w.why + " after writing CC " + hex32(run.ec.cc));
    return false;
  }
  run.o.log.push_back("enabled with CC " + hex32(run.ec.cc) + ", ready in " + fmt_ms(w.elapsed_ms));
  return true;
}

// 5. The writer rings the admin SQ tail doorbell: tail 1 = one command queued.
bool ring_sq_doorbell(IdentifyDoorbellRun& run) {
  const std::uint32_t sq_db = sq_tail_doorbell(0, run.cap.dstrd);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  run.t_ring = Clock::now();
  if (auto err = run.writer.ring(sq_db, 1); !err.empty()) {
    fail_doorbell_step(run.o, "ring", run.writer.name() + " writer: " + err);
    return false;
  }
  run.o.log.push_back(run.writer.name() + " wrote 1 to the admin SQ tail doorbell at BAR0+" + hex32(sq_db));
  return true;
}

// 6. Poll the completion in host memory, never BAR0 from the writer.
bool await_identify_completion(IdentifyDoorbellRun& run) {
  DoorbellOutcome& o = run.o;
  CompletionPoller poller(run.layout.cq_entries);
  const auto deadline_c = run.t_ring + run.timing.completion_limit;
  std::optional<CompletionEntry> ce;
  while (true) {
    const auto bytes = read_cq_entry(run.dma, run.layout.cq_offset + poller.head_offset());
    ce = poller.peek(std::span<const std::uint8_t>(bytes));
    if (ce) { break; }
    if (Clock::now() >= deadline_c) { break; }
    std::this_thread::sleep_for(run.timing.poll);
  }
  if (!ce) {
    const std::uint32_t csts = run.bar.read32(kRegCsts);
    fail_doorbell_step(o, "completion",
                       "no completion within " + std::to_string(run.timing.completion_limit.count()) +
                           " ms after the " + run.writer.name() + " writer rang the doorbell (CSTS " + hex32(csts) +
                           (decode_csts(csts).cfs ? ", fatal status" : "") +
                           "): the doorbell write did not reach the controller, or its DMA did not reach host memory");
    return false;
  }
  o.completion_us = std::chrono::duration<double, std::micro>(Clock::now() - run.t_ring).count();
  o.completion = ce;
  run.bar.write32(cq_head_doorbell(0, run.cap.dstrd), static_cast<std::uint32_t>(poller.advance()));
  o.log.push_back("completion: CID " + std::to_string(ce->cid) + ", SQ head " + std::to_string(ce->sq_head) + ", " +
                  ce->status_text());
  if (!ce->success() || ce->cid != kIdentifyCid || ce->sq_id != 0) {
    fail_doorbell_step(o, "completion",
                       "Identify completed with " + ce->status_text() + ", CID " + std::to_string(ce->cid) + " (sent " +
                           std::to_string(kIdentifyCid) + "), SQ " + std::to_string(ce->sq_id));
    return false;
  }
  return true;
}

// 7. The identify data against what sysfs recorded before the bind.
void check_identify_data(IdentifyDoorbellRun& run) {
  DoorbellOutcome& o = run.o;
  const Expected& expected = run.expected;
  std::array<std::uint8_t, kIdentifyBytes> data{};
  {
    const volatile std::uint8_t* p = run.dma.host + run.layout.identify_offset;
    std::atomic_thread_fence(std::memory_order_acquire);
    for (std::size_t i = 0; i < data.size(); ++i) { data[i] = p[i]; }
  }
  o.identify = parse_identify_controller(data);
  o.passed = true;
  if (trim_blanks(o.identify->serial) != trim_blanks(expected.serial)) {
    fail_doorbell_step(o, "identify",
                       "Identify says serial '" + o.identify->serial + "', sysfs recorded '" + expected.serial + "'");
  } else if (!expected.model.empty() && trim_blanks(o.identify->model) != trim_blanks(expected.model)) {
    fail_doorbell_step(o, "identify",
                       "Identify says model '" + o.identify->model + "', sysfs recorded '" + expected.model + "'");
  } else {
    o.log.push_back("identify: serial '" + o.identify->serial + "', model '" + o.identify->model + "' as recorded");
  }
}

}  // namespace

DoorbellOutcome run_identify_doorbell(RegisterFile& bar, const DmaBuffer& dma, DoorbellWriter& writer,
                                      const Expected& expected, const DoorbellTiming& timing,
                                      const AdminLayout& layout) {
  DoorbellOutcome o;
  IdentifyDoorbellRun run{bar, dma, writer, expected, timing, layout, o};
  if (!check_found_controller(run)) { return o; }
  // From here on the controller is changed: every path below ends in the restore. A step that
  // fails says why in o and ends the sequence.
  if (disable_controller(run) && set_up_admin_queues(run) && enable_controller(run) && ring_sq_doorbell(run) &&
      await_identify_completion(run)) {
    check_identify_data(run);
  }
  restore_controller(run);
  return o;
}

}  // namespace p2pnode::agent::nvme
