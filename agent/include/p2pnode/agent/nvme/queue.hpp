// The admin queue pair in host memory: entry formats (64-byte submission, 16-byte completion),
// the Identify Controller command, the layout of the one DMA buffer the doorbell test uses, and
// completion polling by phase bit. Pure: callers hand in the bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace p2pnode::agent::nvme {

inline constexpr std::size_t kSqEntryBytes = 64;
inline constexpr std::size_t kCqEntryBytes = 16;
inline constexpr std::uint8_t kOpcIdentify = 0x06;
inline constexpr std::uint32_t kCnsController = 0x01;

// One submission queue entry, little-endian dwords as the controller reads them.
struct SubmissionEntry {
  std::array<std::uint32_t, 16> dw{};
  std::uint8_t opcode() const { return static_cast<std::uint8_t>(dw[0] & 0xFF); }
  std::uint16_t cid() const { return static_cast<std::uint16_t>(dw[0] >> 16); }
  std::uint32_t nsid() const { return dw[1]; }
  std::uint64_t prp1() const { return dw[6] | (static_cast<std::uint64_t>(dw[7]) << 32); }
  std::uint64_t prp2() const { return dw[8] | (static_cast<std::uint64_t>(dw[9]) << 32); }
  std::uint32_t cdw10() const { return dw[10]; }
  void store(std::span<std::uint8_t, kSqEntryBytes> out) const;  // little-endian bytes
};
static_assert(sizeof(SubmissionEntry) == kSqEntryBytes);

// Identify Controller (opcode 06h, CNS 01h, NSID 0): 4096 bytes of data to one page at `prp1`
// (which must be 4 KiB aligned so that no PRP2 is needed).
SubmissionEntry identify_controller(std::uint16_t cid, std::uint64_t prp1);

struct CompletionEntry {
  std::uint32_t dw0 = 0, dw1 = 0;
  std::uint16_t sq_head = 0, sq_id = 0, cid = 0;
  std::uint16_t status_phase = 0;  // bit 0 phase tag, bits 1..15 status
  bool phase() const { return (status_phase & 1) != 0; }
  int sc() const { return (status_phase >> 1) & 0xFF; }  // status code
  int sct() const { return (status_phase >> 9) & 0x7; }  // status code type
  bool more() const { return ((status_phase >> 14) & 1) != 0; }
  bool dnr() const { return ((status_phase >> 15) & 1) != 0; }
  bool success() const { return sc() == 0 && sct() == 0; }
  std::string status_text() const;  // "success" or "SCT 0 SC 0x02 (invalid field in command)"
};
CompletionEntry decode_completion(std::span<const std::uint8_t, kCqEntryBytes> bytes);

// Where the SQ, the CQ and the Identify data live in the one page-aligned DMA buffer.
struct AdminLayout {
  int sq_entries = 2;  // the smallest legal queue (a queue of 1 cannot hold an entry)
  int cq_entries = 2;
  std::size_t sq_offset = 0;
  std::size_t cq_offset = 4096;
  std::size_t identify_offset = 8192;
  std::size_t total_bytes = 12288;
};
// Checks the layout against the controller: entries within CAP.MQES, regions 4 KiB aligned and
// not overlapping. Empty when fine, else what is wrong.
std::string check_layout(const AdminLayout& l, int cap_mqes);

// Completion queue head and phase: the controller inverts the phase tag it writes each time it
// wraps, so a new entry is one whose phase equals the expected phase; the host's expected phase
// starts at 1 (the queue memory is zeroed before the controller is enabled) and flips on wrap.
class CompletionPoller {
 public:
  explicit CompletionPoller(int entries) : entries_(entries) {}
  int head() const { return head_; }
  bool expected_phase() const { return phase_; }
  std::size_t head_offset() const { return static_cast<std::size_t>(head_) * kCqEntryBytes; }
  // The entry at the head if the controller has posted it (its phase matches), else nullopt.
  std::optional<CompletionEntry> peek(std::span<const std::uint8_t> cq) const;
  // Consumes the head entry; returns the new head (the value for the CQ head doorbell).
  int advance();

 private:
  int entries_;
  int head_ = 0;
  bool phase_ = true;
};

}  // namespace p2pnode::agent::nvme
