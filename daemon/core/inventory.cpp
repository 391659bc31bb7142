#include "core/inventory.hpp"

namespace p2pnode {

std::uint64_t RebarEntry::largest_supported() const {
  for (int bit = 63; bit >= 0; --bit) {
    if (supported_mask & (1ULL << bit)) { return bit + 20 < 64 ? 1ULL << (bit + 20) : 0; }
  }
  return 0;
}

const Bar* PciDevice::vram_aperture() const {
  const Bar* best = nullptr;
  for (const auto& b : bars) {
    if (b.index < 6 && b.is_mem() && b.is_prefetch() && b.is_64bit() && (!best || b.size() > best->size())) {
      best = &b;
    }
  }
  return best;
}

const char* to_string(IommuMode m) {
  switch (m) {
    case IommuMode::off: return "off";
    case IommuMode::passthrough: return "passthrough";
    case IommuMode::translating: return "translating";
    case IommuMode::unknown: break;
  }
  return "unknown";
}

std::vector<const PciDevice*> Inventory::gpus() const {
  std::vector<const PciDevice*> out;
  for (const auto& d : devices) {
    if (d.kind == DeviceKind::gpu) { out.push_back(&d); }
  }
  return out;
}

std::vector<const PciDevice*> Inventory::nvme_controllers() const {
  std::vector<const PciDevice*> out;
  for (const auto& d : devices) {
    if (d.kind == DeviceKind::nvme) { out.push_back(&d); }
  }
  return out;
}

const PciDevice* Inventory::find(const std::string& bdf) const {
  for (const auto& d : devices) {
    if (d.bdf == bdf) { return &d; }
  }
  return nullptr;
}

const GpuInterconnect* Inventory::interconnect(const std::string& a, const std::string& b) const {
  for (const auto& i : interconnects) {
    if ((i.a == a && i.b == b) || (i.a == b && i.b == a)) { return &i; }
  }
  return nullptr;
}

}  // namespace p2pnode
