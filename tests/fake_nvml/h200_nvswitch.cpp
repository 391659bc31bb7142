// Box h200-nvswitch: two H200s (0000:00:06.0, 0000:00:07.0) with 18 active NVLinks each to
// NVSwitches (bus ids no GPU has), NVML version 7 (what some drivers report for Hopper), NVLink
// P2P ok; a third GPU (0000:00:08.0) on PCIe only whose P2P reads are chipset_not_supported.
// For the interconnect reading (src/host/nvml.cpp) and the process watch (gpu_processes.cpp).
#include <cstdio>

#include "box.hpp"

namespace p2pnode::fake_nvml {
namespace {
struct H200Nvswitch final : Box {
  H200Nvswitch() {
    name = "h200-nvswitch";
    driver_version = "580.159.04";
    bus_ids = {"00000000:00:06.0", "00000000:00:07.0", "00000000:00:08.0"};
  }
  int link_state(int gpu, unsigned link, int* active) const override {
    if (link >= 18) { return kInvalidArgument; }
    *active = gpu < 2 ? 1 : 0;
    return gpu < 2 ? kSuccess : kNotSupported;  // the PCIe-only GPU
  }
  int link_version(int, unsigned, unsigned* v) const override { return *v = 7, kSuccess; }
  int link_remote(int gpu, unsigned link, char* bus_id, unsigned len) const override {
    std::snprintf(bus_id, len, "00000000:%02X:%02X.0", 0xF0 + gpu, link % 4);
    return kSuccess;
  }
  int p2p_status(int a, int b, int cap, int* status) const override {
    const bool nvlink_pair = a < 2 && b < 2;
    if (nvlink_pair) {
      *status = 0;
    } else {
      *status = cap == 2 ? 5 : (cap == 0 || cap == 1 ? 1 : 5);  // NVLink not_supported; read/write CNS
    }
    return kSuccess;
  }
};
}  // namespace

const Box& h200_nvswitch() {
  static const H200Nvswitch box;
  return box;
}
}  // namespace p2pnode::fake_nvml
