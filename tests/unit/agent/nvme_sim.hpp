// A simulated NVMe controller for the doorbell test's unit tests: BAR0 registers with the
// spec's enable/disable behaviour (CSTS.RDY follows CC.EN after a number of CSTS reads, or never),
// the admin queues in a host buffer addressed by IOVA, and Identify Controller executed when the
// admin SQ tail doorbell is written at the offset CAP.DSTRD gives. Every write is recorded.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "p2pnode/agent/nvme/doorbell_test.hpp"

namespace p2pnode::agent::nvme::test {

struct SimWrite {
  std::uint32_t offset;
  std::uint32_t value;
};

class SimController final : public RegisterFile {
 public:
  // Registers as found (the test sets them); dma: the buffer the "device" can reach.
  std::uint64_t cap = 0;
  std::uint32_t vs = 0x00010400, cc = 0, csts = 0, aqa = 0;
  std::uint64_t asq = 0, acq = 0;
  int ready_after_reads = 2;  // CSTS reads until RDY follows EN; -1: never
  bool fatal_on_enable = false;
  bool ignore_doorbell = false;  // a doorbell write that never reaches the controller
  std::string serial = "P2PVM-A", model = "QEMU NVMe Ctrl", firmware = "7.2.0";
  std::uint16_t complete_status = 0;  // status field (without phase) of the completion it posts
  DmaBuffer dma;
  std::vector<SimWrite> writes;
  int identify_commands = 0;
  int other_commands = 0;

  std::uint32_t read32(std::uint32_t off) override {
    switch (off) {
      case kRegCap: return static_cast<std::uint32_t>(cap);
      case kRegCap + 4: return static_cast<std::uint32_t>(cap >> 32);
      case kRegVs: return vs;
      case kRegCc: return cc;
      case kRegCsts: return read_csts();
      case kRegAqa: return aqa;
      case kRegAsq: return static_cast<std::uint32_t>(asq);
      case kRegAsq + 4: return static_cast<std::uint32_t>(asq >> 32);
      case kRegAcq: return static_cast<std::uint32_t>(acq);
      case kRegAcq + 4: return static_cast<std::uint32_t>(acq >> 32);
      default: return 0;
    }
  }

  void write32(std::uint32_t off, std::uint32_t v) override {
    writes.push_back({off, v});
    const bool enabled = (cc & 1) != 0;
    auto set_lo = [](std::uint64_t& r, std::uint32_t x) { r = (r & ~0xFFFFFFFFULL) | x; };
    auto set_hi = [](std::uint64_t& r, std::uint32_t x) {
      r = (r & 0xFFFFFFFFULL) | static_cast<std::uint64_t>(x) << 32;
    };
    switch (off) {
      case kRegCc: {
        const bool en = (v & 1) != 0;
        if (en != enabled) {
          countdown_ = ready_after_reads;
          if (!en) {  // reset: queues gone
            sq_head_ = 0;
            cq_tail_ = 0;
            phase_ = true;
          }
        }
        cc = v;
        return;
      }
      case kRegAqa:
        if (!enabled) { aqa = v; }
        return;
      case kRegAsq:
        if (!enabled) { set_lo(asq, v); }
        return;
      case kRegAsq + 4:
        if (!enabled) { set_hi(asq, v); }
        return;
      case kRegAcq:
        if (!enabled) { set_lo(acq, v); }
        return;
      case kRegAcq + 4:
        if (!enabled) { set_hi(acq, v); }
        return;
      default: break;
    }
    // The admin SQ tail doorbell is at 0x1000 whatever DSTRD is; the CQ head doorbell after it.
    if (off == kDoorbellBase && (csts & 1) && !ignore_doorbell) { process(v); }
  }

  std::uint32_t doorbell_writes_at(std::uint32_t off) const {
    std::uint32_t n = 0;
    for (const auto& w : writes) { n += w.offset == off ? 1 : 0; }
    return n;
  }

 private:
  int countdown_ = -1;
  int sq_head_ = 0, cq_tail_ = 0;
  bool phase_ = true;

  std::uint32_t read_csts() {
    const bool en = (cc & 1) != 0;
    if (((csts & 1) != 0) != en && countdown_ >= 0) {
      if (countdown_ == 0) {
        csts = (csts & ~1U) | (en ? 1U : 0U);
        if (en && fatal_on_enable) { csts |= 2U; }
        if (!en) { csts &= ~2U; }
      } else {
        --countdown_;
      }
    }
    return csts;
  }

  std::uint8_t* at(std::uint64_t iova, std::size_t bytes) {  // nullptr: an IOMMU fault
    for (std::size_t i = 0; i < dma.pages.size(); ++i) {
      if (iova >= dma.pages[i] && iova + bytes <= dma.pages[i] + 4096) {
        return dma.host + i * 4096 + (iova - dma.pages[i]);
      }
    }
    return nullptr;
  }

  void process(std::uint32_t tail) {
    const int sq_n = static_cast<int>(aqa & 0xFFF) + 1;
    const int cq_n = static_cast<int>((aqa >> 16) & 0xFFF) + 1;
    while (sq_head_ != static_cast<int>(tail)) {
      std::uint8_t* e = at(asq + static_cast<std::uint64_t>(sq_head_) * kSqEntryBytes, kSqEntryBytes);
      if (e == nullptr) { return; }
      std::uint32_t dw[16];
      std::memcpy(dw, e, sizeof dw);
      sq_head_ = (sq_head_ + 1) % sq_n;
      const auto cid = static_cast<std::uint16_t>(dw[0] >> 16);
      if ((dw[0] & 0xFF) == kOpcIdentify && dw[10] == kCnsController) {
        ++identify_commands;
        const std::uint64_t prp1 = dw[6] | static_cast<std::uint64_t>(dw[7]) << 32;
        if (std::uint8_t* d = at(prp1, kIdentifyBytes)) {
          std::memset(d, 0, kIdentifyBytes);
          d[0] = 0x36, d[1] = 0x1b, d[2] = 0xf4, d[3] = 0x1a;
          std::memset(d + 4, ' ', 60);
          std::memcpy(d + 4, serial.data(), std::min<std::size_t>(serial.size(), 20));
          std::memcpy(d + 24, model.data(), std::min<std::size_t>(model.size(), 40));
          std::memset(d + 64, ' ', 8);
          std::memcpy(d + 64, firmware.data(), std::min<std::size_t>(firmware.size(), 8));
        }
      } else {
        ++other_commands;
      }
      std::uint8_t* c = at(acq + static_cast<std::uint64_t>(cq_tail_) * kCqEntryBytes, kCqEntryBytes);
      if (c == nullptr) { return; }
      std::memset(c, 0, 8);
      const auto head = static_cast<std::uint16_t>(sq_head_);
      const std::uint16_t sqid = 0;
      const auto sp = static_cast<std::uint16_t>((complete_status << 1) | (phase_ ? 1 : 0));
      std::memcpy(c + 8, &head, 2);
      std::memcpy(c + 10, &sqid, 2);
      std::memcpy(c + 12, &cid, 2);
      std::memcpy(c + 14, &sp, 2);
      if (++cq_tail_ == cq_n) {
        cq_tail_ = 0;
        phase_ = !phase_;
      }
    }
  }
};

// The host CPU as the doorbell writer, through the simulated BAR.
class SimHostWriter final : public DoorbellWriter {
 public:
  explicit SimHostWriter(RegisterFile& bar) : bar_(bar) {}
  std::string name() const override { return "host"; }
  std::string ring(std::uint32_t offset, std::uint32_t value) override {
    bar_.write32(offset, value);
    return {};
  }

 private:
  RegisterFile& bar_;
};

}  // namespace p2pnode::agent::nvme::test
