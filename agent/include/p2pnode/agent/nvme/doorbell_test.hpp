// The doorbell self-test's controller sequence, against abstract BAR0 registers, one DMA buffer
// and a doorbell writer (the host CPU, or a GPU kernel): check CAP/VS/CSTS, disable, set up the
// admin queue pair in host memory, enable, submit Identify Controller by writing the admin SQ tail
// doorbell through the writer, poll the completion in host memory, check the identify data, then
// disable again and put CC, AQA, ASQ and ACQ back as found. Every wait has a deadline. It never
// sends an I/O command and never reads BAR0 through the writer.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pnode/agent/nvme/identify.hpp"
#include "p2pnode/agent/nvme/queue.hpp"
#include "p2pnode/agent/nvme/regs.hpp"

namespace p2pnode::agent::nvme {

// BAR0 as the host CPU reads and writes it (32-bit accesses; 64-bit registers low dword first).
class RegisterFile {
 public:
  virtual ~RegisterFile() = default;
  virtual std::uint32_t read32(std::uint32_t offset) = 0;
  virtual void write32(std::uint32_t offset, std::uint32_t value) = 0;
  std::uint64_t read64(std::uint32_t offset) {
    const std::uint64_t lo = read32(offset);
    return lo | static_cast<std::uint64_t>(read32(offset + 4)) << 32;
  }
  void write64(std::uint32_t offset, std::uint64_t value) {
    write32(offset, static_cast<std::uint32_t>(value));
    write32(offset + 4, static_cast<std::uint32_t>(value >> 32));
  }
};

// Host memory the controller can DMA to: `host` as the CPU sees it, `iova` as the device does
// (an IOMMU address from VFIO_IOMMU_MAP_DMA, or the physical address in noiommu mode).
// Each 4 KiB page has its own device address (contiguous under an IOMMU mapping, scattered in
// noiommu mode); no queue or data region of the test crosses a page.
struct DmaBuffer {
  std::uint8_t* host = nullptr;
  std::size_t bytes = 0;
  std::vector<std::uint64_t> pages;  // device address of each page
  std::uint64_t iova(std::size_t offset) const { return pages.at(offset / 4096) + offset % 4096; }
  static DmaBuffer contiguous(std::uint8_t* host, std::uint64_t iova, std::size_t bytes) {
    DmaBuffer d{host, bytes, {}};
    for (std::size_t off = 0; off < bytes; off += 4096) { d.pages.push_back(iova + off); }
    return d;
  }
};

// Who writes the SQ tail doorbell.
class DoorbellWriter {
 public:
  virtual ~DoorbellWriter() = default;
  virtual std::string name() const = 0;  // "host" or "gpu"
  // Writes `value` to the 32-bit doorbell at BAR0 + offset. Empty on success, else why not.
  virtual std::string ring(std::uint32_t offset, std::uint32_t value) = 0;
};

struct DoorbellTiming {
  std::chrono::milliseconds ready_limit{10000};      // CSTS.RDY after CC.EN changes (CAP.TO caps it too)
  std::chrono::milliseconds completion_limit{2000};  // the Identify completion after the doorbell
  std::chrono::microseconds poll{50};
};

struct Expected {
  std::string serial;  // what sysfs recorded before the bind (required)
  std::string model;   // optional: checked when not empty
};

struct RegisterSnapshot {
  std::uint64_t cap = 0, asq = 0, acq = 0;
  std::uint32_t vs = 0, cc = 0, csts = 0, aqa = 0;
};
RegisterSnapshot read_snapshot(RegisterFile& bar);
nlohmann::json to_json(const RegisterSnapshot& s);

struct DoorbellOutcome {
  bool passed = false;
  std::string
      step;  // where it stopped when it failed: check, disable, setup, enable, ring, completion, identify, restore
  std::string reason;  // why, for a person
  RegisterSnapshot found, left;
  bool found_read = false, left_read = false;
  std::optional<IdentifyController> identify;
  std::optional<CompletionEntry> completion;
  std::optional<double> disable_ms, ready_ms, completion_us;
  std::vector<std::string> log;  // what was done, in order
  bool cc_as_found() const { return found_read && left_read && left.cc == (found.cc & ~1U); }
  bool enabled_when_found() const { return (found.cc & 1U) != 0; }
};
nlohmann::json to_json(const DoorbellOutcome& o);

// Waits until CSTS.RDY equals `ready`, reading CSTS every poll, for at most `limit`. Also stops
// on CSTS all-Fs (gone) or CFS (fatal). Pure apart from the register reads and the clock.
struct WaitResult {
  bool ok = false;
  double elapsed_ms = 0;
  std::uint32_t csts = 0;
  std::string why;  // when not ok
};
WaitResult wait_ready(RegisterFile& bar, bool ready, std::chrono::milliseconds limit, std::chrono::microseconds poll);

// The deadline for a CSTS.RDY change: CAP.TO (at least 500 ms) bounded by the caller's limit.
std::chrono::milliseconds ready_deadline(const Cap& cap, std::chrono::milliseconds limit);

// Why the registers cannot belong to a live controller, or empty.
std::string registers_problem(const RegisterSnapshot& s);

inline constexpr std::uint16_t kIdentifyCid = 0x0D0B;

DoorbellOutcome run_identify_doorbell(RegisterFile& bar, const DmaBuffer& dma, DoorbellWriter& writer,
                                      const Expected& expected, const DoorbellTiming& timing,
                                      const AdminLayout& layout = {});

}  // namespace p2pnode::agent::nvme
