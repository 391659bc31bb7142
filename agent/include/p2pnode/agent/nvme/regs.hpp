// NVMe controller registers in BAR0 (NVMe base specification 2.0, section 3.1.4): offsets,
// pure decoders and encoders. No I/O: the values come from a recorded dump or a live read.
#pragma once

#include <cstdint>
#include <string>

namespace p2pnode::agent::nvme {

// Register offsets in BAR0.
inline constexpr std::uint32_t kRegCap = 0x00;  // 64-bit, controller capabilities
inline constexpr std::uint32_t kRegVs = 0x08;   // version
inline constexpr std::uint32_t kRegIntms = 0x0C;
inline constexpr std::uint32_t kRegIntmc = 0x10;
inline constexpr std::uint32_t kRegCc = 0x14;    // controller configuration
inline constexpr std::uint32_t kRegCsts = 0x1C;  // controller status
inline constexpr std::uint32_t kRegAqa = 0x24;   // admin queue attributes
inline constexpr std::uint32_t kRegAsq = 0x28;   // 64-bit admin SQ base
inline constexpr std::uint32_t kRegAcq = 0x30;   // 64-bit admin CQ base
inline constexpr std::uint32_t kDoorbellBase = 0x1000;

struct Cap {
  std::uint64_t raw = 0;
  int mqes = 0;        // maximum queue entries (the register is 0's based; this is the count)
  bool cqr = false;    // contiguous queues required
  int ams = 0;         // arbitration mechanisms supported (bits)
  int timeout_ms = 0;  // TO: worst time for CSTS.RDY to change after CC.EN changes (500 ms units)
  int dstrd = 0;       // doorbell stride: 2^(2 + DSTRD) bytes
  bool nssrs = false;  // NVM subsystem reset supported
  int css = 0;         // command sets supported (bit 0 NVM, bit 6 I/O sets, bit 7 admin only)
  bool bps = false;    // boot partitions
  int mpsmin = 0;      // minimum memory page size 2^(12 + MPSMIN)
  int mpsmax = 0;
  bool pmrs = false, cmbs = false;

  std::uint32_t doorbell_stride_bytes() const { return 4U << dstrd; }
  std::uint64_t min_page_bytes() const { return 4096ULL << mpsmin; }
  std::uint64_t max_page_bytes() const { return 4096ULL << mpsmax; }
  bool supports_nvm() const { return (css & 0x01) != 0; }
  bool admin_only() const { return (css & 0x80) != 0; }
};
Cap decode_cap(std::uint64_t raw);

struct Version {
  std::uint32_t raw = 0;
  int major = 0, minor = 0, tertiary = 0;
  std::string text() const;  // "1.4.0"
};
Version decode_vs(std::uint32_t raw);

struct Cc {
  std::uint32_t raw = 0;
  bool en = false;
  int css = 0;  // I/O command set selected (0 NVM, 6 all I/O sets, 7 admin only)
  int mps = 0;  // memory page size 2^(12 + MPS)
  int ams = 0;
  int shn = 0;     // shutdown notification
  int iosqes = 0;  // I/O SQ entry size 2^n
  int iocqes = 0;
};
Cc decode_cc(std::uint32_t raw);
std::uint32_t encode_cc(const Cc& cc);  // from the fields (raw is ignored)

struct Csts {
  std::uint32_t raw = 0;
  bool rdy = false;
  bool cfs = false;  // controller fatal status
  int shst = 0;      // shutdown status
  bool nssro = false;
  bool pp = false;  // processing paused
};
Csts decode_csts(std::uint32_t raw);

// AQA: admin CQ and SQ sizes (entries; the register holds them 0's based).
std::uint32_t encode_aqa(int sq_entries, int cq_entries);
int aqa_sq_entries(std::uint32_t aqa);
int aqa_cq_entries(std::uint32_t aqa);

// Doorbells (section 3.1.4.x): SQ y tail at 0x1000 + (2y) * (4 << DSTRD), CQ y head at
// 0x1000 + (2y + 1) * (4 << DSTRD).
std::uint32_t sq_tail_doorbell(int qid, int dstrd);
std::uint32_t cq_head_doorbell(int qid, int dstrd);

// The CC the doorbell test enables the controller with: 4 KiB pages, round robin, no shutdown,
// 64-byte SQ and 16-byte CQ entries, and the NVM command set (or admin-only when that is all the
// controller offers). Empty `why_not` when the controller can do it.
struct EnableConfig {
  std::uint32_t cc = 0;
  std::string why_not;
};
EnableConfig enable_config(const Cap& cap, std::uint64_t host_page_bytes = 4096);

// "0x0000000000000000"-style hex for JSON and messages.
std::string hex32(std::uint32_t v);
std::string hex64(std::uint64_t v);

}  // namespace p2pnode::agent::nvme
