// Box h200-pair-l40s: three GPUs, for `p2pnode-agent --health` (src/host/health.cpp and
// driver_state.cpp). GPU 0 (0000:18:00.0) and GPU 1 (0000:2a:00.0) are H200s with four NVLinks
// each, to each other; GPU 0's link 2 is down and its link 1 has replay and CRC counts; the ECC
// counter is not supported (NVML_ERROR_NOT_SUPPORTED). GPU 2 (0000:c1:00.0) is an L40S on PCIe only,
// on a driver whose field values lack the recovery action, and has no row remapper.
// The driver's state can be changed between reads: P2PNODE_FAKE_NVML_STATE's file holds
// `key=value` lines (gpuN.recovery, gpuN.replay, gpuN.rollover, gpuN.gen, gpuN.width, gpuN.pending,
// gpuN.failure, gpuN.unc_rows, gpuN.ecc, p2p.A.B.CAP with CAP 0-4); what it does not name keeps
// the defaults below.
#include <cstdio>
#include <string>

#include "box.hpp"

namespace p2pnode::fake_nvml {
namespace {
struct H200PairL40s final : Box {
  H200PairL40s() {
    name = "h200-pair-l40s";
    driver_version = "580.95.05";
    bus_ids = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:C1:00.0"};
  }
  // The state file's gpuN.<what>, or `fallback`.
  static unsigned gpu_state(int gpu, const char* what, unsigned fallback) {
    return static_cast<unsigned>(state(("gpu" + std::to_string(gpu) + "." + what).c_str(), fallback));
  }
  // counter: 0 replay, 1 recovery, 2 crc_flit, 3 crc_data (nvmlNvLinkErrorCounter_t)
  static unsigned long long link_counter(int gpu, unsigned link, int counter) {
    return (gpu == 0 && link == 1) ? (counter == 0 ? 12 : counter == 2 ? 3 : counter == 3 ? 5 : 0) : 0;
  }

  const char* gpu_name(int gpu) const override { return gpu < 2 ? "NVIDIA H200" : "NVIDIA L40S"; }
  int link_state(int gpu, unsigned link, int* active) const override {
    if (gpu == 2) {
      return kNotSupported;  // no NVLink
    }
    if (link >= 4) {
      return kInvalidArgument;  // no such link
    }
    *active = !(gpu == 0 && link == 2);
    return kSuccess;
  }
  int link_remote(int gpu, unsigned, char* bus_id, unsigned len) const override {
    std::snprintf(bus_id, len, "%s", bus_ids[gpu == 0 ? 1 : 0]);
    return kSuccess;
  }
  int error_counter(int gpu, unsigned link, int counter, unsigned long long* v) const override {
    if (counter == 4) {
      return kNotSupported;  // ECC data
    }
    *v = link_counter(gpu, link, counter);
    return kSuccess;
  }
  void field_value(int gpu, nvmlFieldValue_t& v) const override {
    switch (v.fieldId) {
      case 230:  // recovery action: an unsigned int; GPU 2's driver predates the field
        if (gpu == 2) {
          v.nvmlReturn = kNotSupported;
          break;
        }
        v.valueType = 1;
        v.value.uiVal = gpu_state(gpu, "recovery", gpu == 1 ? 3 : 0);
        break;
      case 94:  // replay counter
        v.valueType = 1;
        v.value.uiVal = gpu_state(gpu, "replay", gpu == 0 ? 1 : 0);
        break;
      case 95:  // replay rollovers
        v.valueType = 1;
        v.value.uiVal = gpu_state(gpu, "rollover", 0);
        break;
      case 161:
      case 162:
      case 163:  // NVML_FI_DEV_NVLINK_ERROR_DL_*: replay, recovery, flit CRC of link scopeId
        v.valueType = 3;
        v.value.ullVal = link_counter(gpu, v.scopeId, static_cast<int>(v.fieldId) - 161);
        break;
      default: v.nvmlReturn = kInvalidArgument;
    }
  }
  int pcie_replay(int gpu, unsigned* v) const override { return *v = gpu_state(gpu, "replay", 0), kSuccess; }
  int pcie_gen(int gpu, bool max, unsigned* v) const override {
    return *v = max ? 5 : gpu_state(gpu, "gen", 5), kSuccess;
  }
  int pcie_width(int gpu, bool max, unsigned* v) const override {
    return *v = max ? 16 : gpu_state(gpu, "width", 16), kSuccess;
  }
  int remapped_rows(int gpu, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) const override {
    if (gpu == 2) {
      return kNotSupported;  // an L40S-like board without the row remapper
    }
    *corr = 0;
    *unc = gpu_state(gpu, "unc_rows", 0);
    *pending = gpu_state(gpu, "pending", 0);
    *failure = gpu_state(gpu, "failure", 0);
    return kSuccess;
  }
  int total_ecc(int gpu, int type, int counter, unsigned long long* v) const override {
    if (type != 1 || counter != 0) {
      return kInvalidArgument;  // only volatile uncorrected is asked for
    }
    return *v = gpu_state(gpu, "ecc", 0), kSuccess;
  }
  // GPU 0 and 1 talk NVLink (PCI P2P not supported between them, as on the H200 box); GPU 2 is
  // behind the chipset (CNS to both).
  int p2p_status(int a, int b, int cap, int* st) const override {
    const std::string key = "p2p." + std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(cap);
    int def = 0;
    if (a == 2 || b == 2) {
      def = 1;
    } else if (cap == 4) {
      def = 5;
    }
    *st = static_cast<int>(state(key.c_str(), def));
    return kSuccess;
  }
};
}  // namespace

const Box& h200_pair_l40s() {
  static const H200PairL40s box;
  return box;
}
}  // namespace p2pnode::fake_nvml
