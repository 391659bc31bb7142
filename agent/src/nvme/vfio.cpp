#include "p2pnode/agent/nvme/vfio.hpp"

#include <fcntl.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace p2pnode::agent::nvme {
namespace fs = std::filesystem;

namespace {
std::string errno_text(int e) { return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")"; }

std::string link_name(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::read_symlink(p, ec);
  return ec ? std::string() : t.filename().string();
}
}  // namespace

VfioTarget inspect_vfio_target(const std::string& sysfs, const std::string& dev, const std::string& bdf) {
  VfioTarget t;
  t.bdf = bdf;
  const fs::path d = fs::path(sysfs) / "bus/pci/devices" / bdf;
  std::error_code ec;
  if (!fs::exists(d, ec)) {
    t.not_usable = "no PCI device " + bdf + " (" + d.string() + " is missing)";
    return t;
  }
  t.driver = link_name(d / "driver");
  if (t.driver != "vfio-pci") {
    t.not_usable =
        bdf + " is on " + (t.driver.empty() ? std::string("no driver") : t.driver) + ", not vfio-pci: not touched";
    return t;
  }
  t.group = link_name(d / "iommu_group");
  if (t.group.empty()) {
    t.not_usable = bdf + " is on vfio-pci but has no iommu_group link";
    return t;
  }
  const fs::path noiommu = fs::path(dev) / "vfio" / ("noiommu-" + t.group);
  const fs::path type1 = fs::path(dev) / "vfio" / t.group;
  if (fs::exists(noiommu, ec)) {
    t.noiommu = true;
    t.group_dev = noiommu.string();
  } else if (fs::exists(type1, ec)) {
    t.group_dev = type1.string();
  } else {
    t.not_usable = "neither " + type1.string() + " nor " + noiommu.string() + " exists for " + bdf;
  }
  return t;
}

std::unique_ptr<VfioNvme> VfioNvme::open(const VfioTarget& target, std::size_t dma_bytes, std::string& error,
                                         bool& busy) {
  busy = false;
  if (!target.not_usable.empty()) {
    error = target.not_usable;
    return nullptr;
  }
  std::unique_ptr<VfioNvme> d(new VfioNvme());
  error = d->setup(target, dma_bytes, busy);
  if (!error.empty()) { return nullptr; }
  return d;
}

namespace {
// No IOMMU: the device sees physical addresses. The pages are locked (mlock); the kernel may
// still migrate them (compaction) in principle, as with DPDK's and SPDK's noiommu mode.
// Fills dma with host..host+bytes and the physical address of each 4 KiB page; else says why not.
std::string read_pagemap_addresses(std::uint8_t* host, std::size_t bytes, DmaBuffer& dma) {
  int pm = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pm < 0) { return "opening /proc/self/pagemap: " + errno_text(errno); }
  dma.host = host;
  dma.bytes = bytes;
  for (std::size_t off = 0; off < bytes; off += 4096) {
    std::uint64_t entry = 0;
    const auto vpn = (reinterpret_cast<std::uint64_t>(host) + off) / 4096;
    if (pread(pm, &entry, 8, static_cast<off_t>(vpn * 8)) != 8) {
      const std::string why = errno_text(errno);  // before close() can change errno
      ::close(pm);
      return "reading /proc/self/pagemap: " + why;
    }
    const std::uint64_t pfn = entry & ((1ULL << 55) - 1);
    if ((entry >> 63) == 0 || pfn == 0) {
      ::close(pm);
      return "/proc/self/pagemap gives no physical address for the DMA buffer (noiommu mode needs CAP_SYS_ADMIN)";
    }
    dma.pages.push_back(pfn * 4096);
  }
  ::close(pm);
  return {};
}
}  // namespace

std::string VfioNvme::setup(const VfioTarget& t, std::size_t dma_bytes, bool& busy) {
  noiommu_ = t.noiommu;
  const unsigned long type = noiommu_ ? VFIO_NOIOMMU_IOMMU : VFIO_TYPE1v2_IOMMU;
  if (auto e = open_container(type); !e.empty()) { return e; }
  if (auto e = attach_group(t, type, busy); !e.empty()) { return e; }
  if (auto e = open_device(t, busy); !e.empty()) { return e; }
  if (auto e = map_registers(); !e.empty()) { return e; }
  if (auto e = enable_bus_master(); !e.empty()) { return e; }
  return make_dma_buffer(dma_bytes);
}

std::string VfioNvme::open_container(unsigned long type) {
  container_ = ::open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
  if (container_ < 0) { return "opening /dev/vfio/vfio: " + errno_text(errno); }
  if (ioctl(container_, VFIO_GET_API_VERSION) != VFIO_API_VERSION) { return "VFIO API version mismatch"; }
  if (ioctl(container_, VFIO_CHECK_EXTENSION, type) != 1) {
    return noiommu_ ? "the VFIO container does not offer the noiommu IOMMU (vfio enable_unsafe_noiommu_mode is off?)"
                    : "the VFIO container does not offer the type1v2 IOMMU (vfio_iommu_type1 not loaded?)";
  }
  return {};
}

std::string VfioNvme::attach_group(const VfioTarget& t, unsigned long type, bool& busy) {
  group_ = ::open(t.group_dev.c_str(), O_RDWR | O_CLOEXEC);
  if (group_ < 0) {
    const int e = errno;
    busy = e == EBUSY;
    return busy ? t.bdf + " is in use: another process holds " + t.group_dev + "; not touched"
                : "opening " + t.group_dev + ": " + errno_text(e);
  }
  vfio_group_status gs{};
  gs.argsz = sizeof gs;
  if (ioctl(group_, VFIO_GROUP_GET_STATUS, &gs) != 0) { return "VFIO_GROUP_GET_STATUS: " + errno_text(errno); }
  if ((gs.flags & VFIO_GROUP_FLAGS_VIABLE) == 0) {
    return "IOMMU group " + t.group + " is not viable: every device in it must be bound to vfio-pci (or to no driver)";
  }
  if (ioctl(group_, VFIO_GROUP_SET_CONTAINER, &container_) != 0) {
    return "VFIO_GROUP_SET_CONTAINER: " + errno_text(errno);
  }
  if (ioctl(container_, VFIO_SET_IOMMU, type) != 0) {
    const int e = errno;
    if (e == EPERM && !noiommu_) {
      return "VFIO_SET_IOMMU: " + errno_text(e) +
             ": the IOMMU has no interrupt remapping and vfio_iommu_type1 refuses such a platform unless loaded "
             "with allow_unsafe_interrupts=1 (or boot with interrupt remapping on)";
    }
    return "VFIO_SET_IOMMU: " + errno_text(e);
  }
  return {};
}

std::string VfioNvme::open_device(const VfioTarget& t, bool& busy) {
  device_ = ioctl(group_, VFIO_GROUP_GET_DEVICE_FD, t.bdf.c_str());
  if (device_ < 0) {
    const int e = errno;
    busy = e == EBUSY;
    return busy ? t.bdf + " is in use: another process has the VFIO device open; not touched"
                : "VFIO_GROUP_GET_DEVICE_FD " + t.bdf + ": " + errno_text(e);
  }
  log_.push_back("opened " + t.bdf + " through " + t.group_dev + " (" + iommu_mode() + ")");
  return {};
}

std::string VfioNvme::map_registers() {
  vfio_region_info bar{};
  bar.argsz = sizeof bar;
  bar.index = VFIO_PCI_BAR0_REGION_INDEX;
  if (ioctl(device_, VFIO_DEVICE_GET_REGION_INFO, &bar) != 0) { return "BAR0 region info: " + errno_text(errno); }
  if (bar.size < 0x2000) {
    return "BAR0 is " + std::to_string(bar.size) + " bytes, too small for NVMe registers and doorbells";
  }
  bar0_offset_ = bar.offset;
  bar0_region_bytes_ = bar.size;
  vfio_region_info cfg{};
  cfg.argsz = sizeof cfg;
  cfg.index = VFIO_PCI_CONFIG_REGION_INDEX;
  if (ioctl(device_, VFIO_DEVICE_GET_REGION_INFO, &cfg) != 0) { return "config region info: " + errno_text(errno); }
  config_offset_ = cfg.offset;

  if ((bar.flags & VFIO_REGION_INFO_FLAG_MMAP) != 0) {
    void* p = mmap(nullptr, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, device_, static_cast<off_t>(bar.offset));
    if (p == MAP_FAILED) {
      log_.push_back("mmap of BAR0 failed (" + errno_text(errno) + "); registers through pread/pwrite");
    } else {
      bar0_ = static_cast<volatile std::uint8_t*>(p);
      bar0_bytes_ = bar.size;
      log_.push_back("BAR0 mapped: " + std::to_string(bar.size) + " bytes");
    }
  } else {
    log_.push_back("VFIO offers no mmap of BAR0; registers through pread/pwrite");
  }
  return {};
}

// COMMAND: Memory and BusMaster (the controller must DMA); read-modify-write, restored on close.
std::string VfioNvme::enable_bus_master() {
  std::uint16_t cmd = 0;
  if (pread(device_, &cmd, 2, static_cast<off_t>(config_offset_ + 4)) != 2) {
    return "reading COMMAND: " + errno_text(errno);
  }
  command_found_ = cmd;
  if ((cmd & 0x6) != 0x6) {
    const std::uint16_t want = cmd | 0x6;
    if (pwrite(device_, &want, 2, static_cast<off_t>(config_offset_ + 4)) != 2) {
      return "writing COMMAND: " + errno_text(errno);
    }
    command_changed_ = true;
    log_.push_back("COMMAND " + hex32(cmd) + " -> " + hex32(want) + " (Memory+BusMaster; restored at the end)");
  }
  return {};
}

// The DMA buffer: page-aligned, locked, zeroed; mapped at kDmaIova through the IOMMU, or its
// pages' physical addresses without one.
std::string VfioNvme::make_dma_buffer(std::size_t dma_bytes) {
  dma_mem_bytes_ = (dma_bytes + 4095) & ~std::size_t{4095};
  dma_mem_ = mmap(nullptr, dma_mem_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (dma_mem_ == MAP_FAILED) {
    dma_mem_ = nullptr;
    return "allocating the DMA buffer: " + errno_text(errno);
  }
  if (mlock(dma_mem_, dma_mem_bytes_) != 0) { return "mlock of the DMA buffer: " + errno_text(errno); }
  std::memset(dma_mem_, 0, dma_mem_bytes_);
  auto* host = static_cast<std::uint8_t*>(dma_mem_);
  if (!noiommu_) {
    vfio_iommu_type1_dma_map map{};
    map.argsz = sizeof map;
    map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
    map.vaddr = reinterpret_cast<std::uint64_t>(dma_mem_);
    map.iova = kDmaIova;
    map.size = dma_mem_bytes_;
    if (ioctl(container_, VFIO_IOMMU_MAP_DMA, &map) != 0) {
      return "VFIO_IOMMU_MAP_DMA at IOVA " + hex64(kDmaIova) + ": " + errno_text(errno);
    }
    dma_mapped_ = true;
    dma_ = DmaBuffer::contiguous(host, kDmaIova, dma_mem_bytes_);
    log_.push_back("DMA buffer: " + std::to_string(dma_mem_bytes_) + " bytes mapped at IOVA " + hex64(kDmaIova));
    return {};
  }
  if (auto e = read_pagemap_addresses(host, dma_mem_bytes_, dma_); !e.empty()) { return e; }
  log_.push_back("DMA buffer: " + std::to_string(dma_mem_bytes_) + " bytes, physical pages from /proc/self/pagemap");
  return {};
}

VfioNvme::~VfioNvme() {
  if (device_ >= 0 && command_changed_) {
    (void)!pwrite(device_, &command_found_, 2, static_cast<off_t>(config_offset_ + 4));
  }
  if (dma_mapped_) {
    vfio_iommu_type1_dma_unmap un{};
    un.argsz = sizeof un;
    un.iova = kDmaIova;
    un.size = dma_mem_bytes_;
    ioctl(container_, VFIO_IOMMU_UNMAP_DMA, &un);
  }
  if (dma_mem_ != nullptr) { munmap(dma_mem_, dma_mem_bytes_); }
  if (bar0_ != nullptr) { munmap(const_cast<std::uint8_t*>(bar0_), bar0_bytes_); }
  if (device_ >= 0) { ::close(device_); }
  if (group_ >= 0) {
    ioctl(group_, VFIO_GROUP_UNSET_CONTAINER);
    ::close(group_);
  }
  if (container_ >= 0) { ::close(container_); }
}

std::uint32_t VfioNvme::read32(std::uint32_t offset) {
  if (bar0_ != nullptr && offset + 4 <= bar0_bytes_) {
    return *reinterpret_cast<const volatile std::uint32_t*>(bar0_ + offset);
  }
  std::uint32_t v = 0xFFFFFFFFu;
  if (pread(device_, &v, 4, static_cast<off_t>(bar0_offset_ + offset)) != 4) { return 0xFFFFFFFFu; }
  return v;
}

void VfioNvme::write32(std::uint32_t offset, std::uint32_t value) {
  if (bar0_ != nullptr && offset + 4 <= bar0_bytes_) {
    *reinterpret_cast<volatile std::uint32_t*>(bar0_ + offset) = value;
    return;
  }
  (void)!pwrite(device_, &value, 4, static_cast<off_t>(bar0_offset_ + offset));
}

std::string HostDoorbellWriter::ring(std::uint32_t offset, std::uint32_t value) {
  dev_.write32(offset, value);
  return {};
}

}  // namespace p2pnode::agent::nvme
