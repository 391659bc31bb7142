#pragma once
// Pure: NVMe controller registers read from BAR0 (CAP 0x00, VS 0x08, CSTS 0x1C) and whether they
// say a live controller answers (all-Fs means asleep in D3 or gone from the bus).
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

namespace p2pnode::nvme {

constexpr std::size_t kRegisterBytes = 0x20;

struct NvmeRegisters {
  std::uint64_t cap = 0;
  std::uint32_t vs = 0;
  std::uint32_t csts = 0;

  int mqes() const { return static_cast<int>(cap & 0xFFFF) + 1; }  // 0's based
  int dstrd() const { return static_cast<int>((cap >> 32) & 0xF); }
  int timeout_ms() const { return static_cast<int>((cap >> 24) & 0xFF) * 500; }
  std::string version() const;  // "1.4.0"
};

// Little-endian registers from the first kRegisterBytes of BAR0; nullopt when too short.
std::optional<NvmeRegisters> decode_nvme_registers(std::span<const std::uint8_t> bar0);

// Empty when the registers look like a live controller; otherwise why not ("BAR0 reads all-Fs …").
std::string nvme_registers_problem(const NvmeRegisters& r);

nlohmann::json to_json(const NvmeRegisters& r);

}  // namespace p2pnode::nvme
