#include "p2pnode/agent/nvme/queue.hpp"

#include <algorithm>
#include <cstdio>

namespace p2pnode::agent::nvme {
namespace {
std::uint32_t le32(std::span<const std::uint8_t> b, std::size_t off) {
  return static_cast<std::uint32_t>(b[off]) | static_cast<std::uint32_t>(b[off + 1]) << 8 |
         static_cast<std::uint32_t>(b[off + 2]) << 16 | static_cast<std::uint32_t>(b[off + 3]) << 24;
}
std::uint16_t le16(std::span<const std::uint8_t> b, std::size_t off) {
  return static_cast<std::uint16_t>(b[off] | b[off + 1] << 8);
}

const char* generic_status(int sc) {
  switch (sc) {
    case 0x00: return "successful completion";
    case 0x01: return "invalid command opcode";
    case 0x02: return "invalid field in command";
    case 0x03: return "command ID conflict";
    case 0x04: return "data transfer error";
    case 0x06: return "internal error";
    case 0x07: return "command abort requested";
    case 0x0B: return "invalid namespace or format";
    case 0x13: return "PRP offset invalid";
    default: return "see the NVMe specification, generic command status";
  }
}
}  // namespace

void SubmissionEntry::store(std::span<std::uint8_t, kSqEntryBytes> out) const {
  for (std::size_t i = 0; i < dw.size(); ++i) {
    for (std::size_t b = 0; b < 4; ++b) { out[i * 4 + b] = static_cast<std::uint8_t>(dw[i] >> (8 * b)); }
  }
}

SubmissionEntry identify_controller(std::uint16_t cid, std::uint64_t prp1) {
  SubmissionEntry e;
  e.dw[0] = kOpcIdentify | static_cast<std::uint32_t>(cid) << 16;  // FUSE 0, PSDT 0 (PRPs)
  e.dw[1] = 0;                                                     // NSID: none for CNS 01h
  e.dw[6] = static_cast<std::uint32_t>(prp1);
  e.dw[7] = static_cast<std::uint32_t>(prp1 >> 32);
  e.dw[10] = kCnsController;
  return e;
}

CompletionEntry decode_completion(std::span<const std::uint8_t, kCqEntryBytes> b) {
  CompletionEntry c;
  c.dw0 = le32(b, 0);
  c.dw1 = le32(b, 4);
  c.sq_head = le16(b, 8);
  c.sq_id = le16(b, 10);
  c.cid = le16(b, 12);
  c.status_phase = le16(b, 14);
  return c;
}

std::string CompletionEntry::status_text() const {
  if (success()) { return "success"; }
  char buf[128];
  std::snprintf(buf, sizeof buf, "SCT %d SC 0x%02x (%s)%s", sct(), sc(),
                sct() == 0 ? generic_status(sc()) : "not a generic status", dnr() ? ", do not retry" : "");
  return buf;
}

std::string check_layout(const AdminLayout& l, int cap_mqes) {
  if (l.sq_entries < 2 || l.cq_entries < 2) { return "admin queues need at least 2 entries"; }
  if (l.sq_entries > cap_mqes || l.cq_entries > cap_mqes || l.sq_entries > 4096 || l.cq_entries > 4096) {
    return "admin queue of " + std::to_string(std::max(l.sq_entries, l.cq_entries)) + " entries exceeds CAP.MQES (" +
           std::to_string(cap_mqes) + ") or 4096";
  }
  auto aligned = [](std::size_t o) { return o % 4096 == 0; };
  if (!aligned(l.sq_offset) || !aligned(l.cq_offset) || !aligned(l.identify_offset)) {
    return "admin SQ, CQ and Identify data must be 4 KiB aligned";
  }
  const std::size_t sq_end = l.sq_offset + static_cast<std::size_t>(l.sq_entries) * kSqEntryBytes;
  const std::size_t cq_end = l.cq_offset + static_cast<std::size_t>(l.cq_entries) * kCqEntryBytes;
  const std::size_t id_end = l.identify_offset + 4096;
  auto overlap = [](std::size_t a0, std::size_t a1, std::size_t b0, std::size_t b1) { return a0 < b1 && b0 < a1; };
  if (overlap(l.sq_offset, sq_end, l.cq_offset, cq_end) || overlap(l.sq_offset, sq_end, l.identify_offset, id_end) ||
      overlap(l.cq_offset, cq_end, l.identify_offset, id_end)) {
    return "admin SQ, CQ and Identify data overlap";
  }
  if (std::max({sq_end, cq_end, id_end}) > l.total_bytes) { return "the DMA buffer is smaller than the layout"; }
  return {};
}

std::optional<CompletionEntry> CompletionPoller::peek(std::span<const std::uint8_t> cq) const {
  const std::size_t off = head_offset();
  if (cq.size() < off + kCqEntryBytes) { return std::nullopt; }
  const auto entry = decode_completion(cq.subspan(off).first<kCqEntryBytes>());
  if (entry.phase() != phase_) { return std::nullopt; }
  return entry;
}

int CompletionPoller::advance() {
  if (++head_ == entries_) {
    head_ = 0;
    phase_ = !phase_;
  }
  return head_;
}

}  // namespace p2pnode::agent::nvme
