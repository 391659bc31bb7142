#include "p2pnode/agent/nvme/regs.hpp"

#include <cstdio>

namespace p2pnode::agent::nvme {
namespace {
int bits(std::uint64_t v, int lo, int width) { return static_cast<int>((v >> lo) & ((1ULL << width) - 1)); }
}  // namespace

Cap decode_cap(std::uint64_t raw) {
  Cap c;
  c.raw = raw;
  c.mqes = bits(raw, 0, 16) + 1;
  c.cqr = bits(raw, 16, 1) != 0;
  c.ams = bits(raw, 17, 2);
  c.timeout_ms = bits(raw, 24, 8) * 500;
  c.dstrd = bits(raw, 32, 4);
  c.nssrs = bits(raw, 36, 1) != 0;
  c.css = bits(raw, 37, 8);
  c.bps = bits(raw, 45, 1) != 0;
  c.mpsmin = bits(raw, 48, 4);
  c.mpsmax = bits(raw, 52, 4);
  c.pmrs = bits(raw, 56, 1) != 0;
  c.cmbs = bits(raw, 57, 1) != 0;
  return c;
}

std::string Version::text() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(tertiary);
}

Version decode_vs(std::uint32_t raw) { return {raw, bits(raw, 16, 16), bits(raw, 8, 8), bits(raw, 0, 8)}; }

Cc decode_cc(std::uint32_t raw) {
  Cc c;
  c.raw = raw;
  c.en = bits(raw, 0, 1) != 0;
  c.css = bits(raw, 4, 3);
  c.mps = bits(raw, 7, 4);
  c.ams = bits(raw, 11, 3);
  c.shn = bits(raw, 14, 2);
  c.iosqes = bits(raw, 16, 4);
  c.iocqes = bits(raw, 20, 4);
  return c;
}

std::uint32_t encode_cc(const Cc& c) {
  auto put = [](int v, int lo, int width) { return (static_cast<std::uint32_t>(v) & ((1U << width) - 1)) << lo; };
  return put(c.en ? 1 : 0, 0, 1) | put(c.css, 4, 3) | put(c.mps, 7, 4) | put(c.ams, 11, 3) | put(c.shn, 14, 2) |
         put(c.iosqes, 16, 4) | put(c.iocqes, 20, 4);
}

Csts decode_csts(std::uint32_t raw) {
  Csts s;
  s.raw = raw;
  s.rdy = bits(raw, 0, 1) != 0;
  s.cfs = bits(raw, 1, 1) != 0;
  s.shst = bits(raw, 2, 2);
  s.nssro = bits(raw, 4, 1) != 0;
  s.pp = bits(raw, 5, 1) != 0;
  return s;
}

std::uint32_t encode_aqa(int sq_entries, int cq_entries) {
  return ((static_cast<std::uint32_t>(cq_entries - 1) & 0xFFF) << 16) |
         (static_cast<std::uint32_t>(sq_entries - 1) & 0xFFF);
}
int aqa_sq_entries(std::uint32_t aqa) { return bits(aqa, 0, 12) + 1; }
int aqa_cq_entries(std::uint32_t aqa) { return bits(aqa, 16, 12) + 1; }

std::uint32_t sq_tail_doorbell(int qid, int dstrd) {
  return kDoorbellBase + static_cast<std::uint32_t>(2 * qid) * (4U << dstrd);
}
std::uint32_t cq_head_doorbell(int qid, int dstrd) {
  return kDoorbellBase + static_cast<std::uint32_t>(2 * qid + 1) * (4U << dstrd);
}

EnableConfig enable_config(const Cap& cap, std::uint64_t host_page_bytes) {
  EnableConfig e;
  if (cap.min_page_bytes() > host_page_bytes || cap.max_page_bytes() < host_page_bytes) {
    e.why_not = "the controller's page sizes (" + std::to_string(cap.min_page_bytes()) + " to " +
                std::to_string(cap.max_page_bytes()) + " bytes, CAP.MPSMIN/MPSMAX) exclude the host page of " +
                std::to_string(host_page_bytes) + " bytes";
    return e;
  }
  Cc cc;
  cc.en = true;
  if (cap.supports_nvm()) {
    cc.css = 0;
  } else if (cap.admin_only()) {
    cc.css = 7;
  } else {
    e.why_not = "CAP.CSS " + hex32(static_cast<std::uint32_t>(cap.css)) +
                " offers neither the NVM command set nor admin-only operation";
    return e;
  }
  int shift = 0;
  while ((4096ULL << shift) < host_page_bytes) { ++shift; }
  cc.mps = shift;
  cc.ams = 0;
  cc.shn = 0;
  cc.iosqes = 6;  // 64-byte SQ entries
  cc.iocqes = 4;  // 16-byte CQ entries
  e.cc = encode_cc(cc);
  return e;
}

std::string hex32(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}
std::string hex64(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace p2pnode::agent::nvme
