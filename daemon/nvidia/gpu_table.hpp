#pragma once
// Known NVIDIA GPUs by PCI device id: marketing name and VRAM. Sources: the PCI ID repository
// (pci-ids.ucw.cz, vendor 10de) for ids and names; NVIDIA's product specification pages for
// memory sizes. HBM parts list the physical memory (H100 80 GiB, H200 141 GB -> 144 GiB of
// stacks), which is what the BAR1 aperture must cover.
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/units.hpp"

namespace p2pnode::nvidia {

struct GpuModel {
  std::uint16_t device_id;
  std::string_view name;
  Bytes vram;
};

std::optional<GpuModel> find_gpu_model(std::uint16_t device_id);

}  // namespace p2pnode::nvidia
