#include "nvme/registers.hpp"

#include <cstdio>

namespace p2pnode::nvme {
namespace {
std::string hex(std::uint64_t v, int digits) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return b;
}
}  // namespace

std::string NvmeRegisters::version() const {
  return std::to_string(vs >> 16) + "." + std::to_string((vs >> 8) & 0xFF) + "." + std::to_string(vs & 0xFF);
}

std::optional<NvmeRegisters> decode_nvme_registers(std::span<const std::uint8_t> b) {
  if (b.size() < kRegisterBytes) { return std::nullopt; }
  auto le = [&](std::size_t off, int n) {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) { v = (v << 8) | b[off + static_cast<std::size_t>(i)]; }
    return v;
  };
  NvmeRegisters r;
  r.cap = le(0x00, 8);
  r.vs = static_cast<std::uint32_t>(le(0x08, 4));
  r.csts = static_cast<std::uint32_t>(le(0x1C, 4));
  return r;
}

std::string nvme_registers_problem(const NvmeRegisters& r) {
  if (r.cap == ~std::uint64_t{0} && r.vs == 0xFFFFFFFFu) {
    return "BAR0 reads all-Fs (CAP " + hex(r.cap, 16) + ", VS " + hex(r.vs, 8) +
           "): the controller is asleep (D3) or gone from the bus";
  }
  if (r.csts == 0xFFFFFFFFu) { return "CSTS reads all-Fs: the controller does not answer"; }
  const std::uint32_t major = r.vs >> 16;
  if (major < 1 || major > 2) { return "VS " + hex(r.vs, 8) + " is not an NVMe version (expected 1.x or 2.x)"; }
  if (r.cap == 0) { return "CAP reads 0: BAR0 is not an NVMe register block"; }
  return {};
}

nlohmann::json to_json(const NvmeRegisters& r) {
  return {{"cap", hex(r.cap, 16)}, {"vs", hex(r.vs, 8)},         {"csts", hex(r.csts, 8)},    {"version", r.version()},
          {"mqes", r.mqes()},      {"ready", (r.csts & 1) != 0}, {"fatal", (r.csts & 2) != 0}};
}

}  // namespace p2pnode::nvme
