#pragma once
// What gdrcopy needs of a node, decided from plain facts (pure; checks/gdrcopy.cpp reports it): how
// much of a GPU's BAR1 its users can pin, and whether the driver can offer gdrcopy's dma-buf backend,
// the one that needs no gdrdrv.
#include <optional>
#include <string>

#include "core/units.hpp"

namespace p2pnode::gdrcopy {

// The NVIDIA driver maps every pin into BAR1 and refuses one that would leave less than this free
// (CLI_THIRD_PARTY_P2P_BAR1_RESERVE in the open module's source: 36 MiB on 550, 565 and 570).
constexpr Bytes kBar1Reserve = 36 * MiB;
// Pins are whole GPU pages of 64 KiB.
constexpr Bytes kGpuPage = 64 * KiB;

// The most that can be pinned at once in a BAR1 of `aperture` bytes (0 when it cannot hold the
// reserve), and what a pin of `bytes` takes of it.
Bytes pinnable(Bytes aperture);
Bytes pin_footprint(Bytes bytes);

// gdrcopy 2.6's dma-buf backend needs a driver whose CUDA version is 13.3 or later (its
// cuda_wrapper.c refuses older) and a GPU that reports dma-buf support.
enum class DmaBuf { unavailable, unknown };
struct DmaBufVerdict {
  DmaBuf support = DmaBuf::unknown;
  std::optional<std::string> cuda;  // the CUDA version the driver's branch reports, where known
  std::string why;                  // one clause for a finding's summary
};
DmaBufVerdict dmabuf_support(const std::string& driver_version);

}  // namespace p2pnode::gdrcopy
