// An NVMe drive opened through VFIO for the doorbell test: the group (type1 container when an
// IOMMU translates, the noiommu group otherwise), the device, BAR0 mapped, COMMAND with Memory and
// BusMaster, and one DMA buffer the controller can reach (VFIO_IOMMU_MAP_DMA at a fixed IOVA; in
// noiommu mode the pages' physical addresses from /proc/self/pagemap, which needs CAP_SYS_ADMIN).
// Everything is undone by the destructor. Never opens a drive that is not on vfio-pci.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "p2pnode/agent/nvme/doorbell_test.hpp"

namespace p2pnode::agent::nvme {

// What sysfs says about the drive before anything is opened.
struct VfioTarget {
  std::string bdf;
  std::string driver;     // the driver link's name ("" when none)
  std::string group;      // IOMMU group number ("" when none)
  std::string group_dev;  // /dev/vfio/N or /dev/vfio/noiommu-N
  bool noiommu = false;
  std::string not_usable;  // why the test must not touch it (empty when it may)
};
// Reads <sysfs>/bus/pci/devices/<bdf>/{driver,iommu_group} and which /dev/vfio node exists under
// <dev> (normally "/dev"). Pure apart from those reads.
VfioTarget inspect_vfio_target(const std::string& sysfs, const std::string& dev, const std::string& bdf);

// The fixed IOVA of the DMA buffer in type1 mode (1 GiB: inside every IOMMU's aperture, clear of
// the x86 MSI window at 0xfee00000).
inline constexpr std::uint64_t kDmaIova = 0x4000'0000ULL;

class VfioNvme final : public RegisterFile {
 public:
  // Opens the drive; on failure returns nullptr and sets `error`, with `busy` set when another
  // process holds the group or device (then nothing was touched).
  static std::unique_ptr<VfioNvme> open(const VfioTarget& target, std::size_t dma_bytes, std::string& error,
                                        bool& busy);
  ~VfioNvme() override;
  VfioNvme(const VfioNvme&) = delete;
  VfioNvme& operator=(const VfioNvme&) = delete;

  std::uint32_t read32(std::uint32_t offset) override;
  void write32(std::uint32_t offset, std::uint32_t value) override;

  const DmaBuffer& dma() const { return dma_; }
  // BAR0 mapped into this process (for the host writer and for cudaHostRegister), or nullptr
  // when VFIO does not allow mmap of it (then registers go through pread/pwrite).
  volatile std::uint8_t* bar0() const { return bar0_; }
  std::size_t bar0_bytes() const { return bar0_bytes_; }
  bool noiommu() const { return noiommu_; }
  std::string iommu_mode() const { return noiommu_ ? "noiommu" : "type1"; }
  std::uint16_t command_found() const { return command_found_; }
  std::vector<std::string>& log() { return log_; }

 private:
  VfioNvme() = default;
  std::string setup(const VfioTarget& t, std::size_t dma_bytes, bool& busy);
  // setup's steps, in order; each returns why it failed, or empty.
  std::string open_container(unsigned long type);
  std::string attach_group(const VfioTarget& t, unsigned long type, bool& busy);
  std::string open_device(const VfioTarget& t, bool& busy);
  std::string map_registers();
  std::string enable_bus_master();
  std::string make_dma_buffer(std::size_t dma_bytes);

  int container_ = -1, group_ = -1, device_ = -1;
  bool noiommu_ = false;
  std::uint64_t bar0_offset_ = 0, config_offset_ = 0;
  volatile std::uint8_t* bar0_ = nullptr;
  std::size_t bar0_bytes_ = 0;
  std::size_t bar0_region_bytes_ = 0;
  void* dma_mem_ = nullptr;
  std::size_t dma_mem_bytes_ = 0;
  bool dma_mapped_ = false;
  DmaBuffer dma_;
  std::uint16_t command_found_ = 0;
  bool command_changed_ = false;
  std::vector<std::string> log_;
};

// The host CPU writes the doorbell: a 32-bit store to the mapped BAR0, or pwrite when unmapped.
class HostDoorbellWriter final : public DoorbellWriter {
 public:
  explicit HostDoorbellWriter(VfioNvme& dev) : dev_(dev) {}
  std::string name() const override { return "host"; }
  std::string ring(std::uint32_t offset, std::uint32_t value) override;

 private:
  VfioNvme& dev_;
};

}  // namespace p2pnode::agent::nvme
