// Box h100x4: a healthy 4x H100 SXM box (docs FACTS), for the quiet-box test: GPUs 0000:00:06.0 to
// 0000:00:09.0, 18 NVLinks each, 6 to each peer (NV18 every pair). Its counters rise as that box's
// did: NVML's ecc_data at 0.66 a second a link at rest (2,840 in 60 s over 72 links) and 18.7 a
// second a link during a self-test (about 5,800 in 4.3 s over 72 links), spread unevenly over the
// links (0.5x to 1.5x of the mean); replay, recovery and both CRC counters stay 0; the PCIe replay
// counters stand at 10, 2, 13 and 0. P2PNODE_FAKE_NVML_STATE's file says where the clock is (`t=`
// seconds, `selftest=` seconds of self-test so far) and may name one bad link (`bad_gpu=`,
// `bad_link=`, `bad_kind=` 1: replays and recoveries, 2: corrected ECC at 2,000 a second).
#include <cmath>
#include <cstdio>

#include "box.hpp"

namespace p2pnode::fake_nvml {
namespace {
struct H100x4 final : Box {
  static constexpr unsigned kLinks = 18;
  static constexpr double kIdlePerLink = 2840.0 / 60 / 72;       // the healthy 4x H100 box, idle
  static constexpr double kSelftestPerLink = 5800.0 / 4.3 / 72;  // the same box, one self-test
  static constexpr unsigned kPcieReplays[4] = {10, 2, 13, 0};

  H100x4() {
    name = "h100x4";
    driver_version = "580.159.04";
    bus_ids = {"00000000:00:06.0", "00000000:00:07.0", "00000000:00:08.0", "00000000:00:09.0"};
  }
  // Link l of GPU g goes to the (l / 6)-th of the other three GPUs.
  static int peer(int g, unsigned l) {
    const int k = static_cast<int>(l / 6);
    return k < g ? k : k + 1;
  }
  static bool bad(int g, unsigned l, int kind) {
    return static_cast<int>(state("bad_kind", 0)) == kind && static_cast<int>(state("bad_gpu", -1)) == g &&
           static_cast<int>(state("bad_link", -1)) == static_cast<int>(l);
  }
  // counter: 0 replay, 1 recovery, 2 crc_flit, 3 crc_data, 4 ecc_data (nvmlNvLinkErrorCounter_t)
  static unsigned long long counter(int g, unsigned l, int c) {
    const double t = state("t", 0), selftest = state("selftest", 0);
    if (c == 4) {
      const double spread = 0.5 + (l % 5) * 0.25;  // the mean over five links is 1
      double v = spread * (kIdlePerLink * t + kSelftestPerLink * selftest);
      if (bad(g, l, 2)) { v += 2000 * t; }
      return static_cast<unsigned long long>(std::floor(v));
    }
    if (bad(g, l, 1) && c == 0) {
      return static_cast<unsigned long long>(t / 20);  // 3 replays a minute
    }
    if (bad(g, l, 1) && c == 1) {
      return static_cast<unsigned long long>(t / 120);  // a recovery every 2 minutes
    }
    return 0;
  }

  const char* gpu_name(int) const override { return "NVIDIA H100 80GB HBM3"; }
  int link_state(int, unsigned link, int* active) const override {
    if (link >= kLinks) { return kInvalidArgument; }
    return *active = 1, kSuccess;
  }
  int link_remote(int gpu, unsigned link, char* bus_id, unsigned len) const override {
    std::snprintf(bus_id, len, "%s", bus_ids[static_cast<unsigned>(peer(gpu, link))]);
    return kSuccess;
  }
  int error_counter(int gpu, unsigned link, int c, unsigned long long* v) const override {
    if (link >= kLinks || c < 0 || c > 4) { return kInvalidArgument; }
    return *v = counter(gpu, link, c), kSuccess;
  }
  void field_value(int gpu, nvmlFieldValue_t& v) const override {
    switch (v.fieldId) {
      case 230:
        v.valueType = 1;
        v.value.uiVal = 0;
        break;  // recovery action: none
      case 94:
        v.valueType = 1;
        v.value.uiVal = kPcieReplays[gpu];
        break;
      case 95:
        v.valueType = 1;
        v.value.uiVal = 0;
        break;
      case 161:
      case 162:
      case 163:  // NVML_FI_DEV_NVLINK_ERROR_DL_*: replay, recovery, flit CRC of link scopeId
        v.valueType = 3;
        v.value.ullVal = counter(gpu, v.scopeId, static_cast<int>(v.fieldId) - 161);
        break;
      default: v.nvmlReturn = kInvalidArgument;
    }
  }
  int pcie_replay(int gpu, unsigned* v) const override { return *v = kPcieReplays[gpu], kSuccess; }
  int pcie_gen(int, bool, unsigned* v) const override { return *v = 5, kSuccess; }
  int pcie_width(int, bool, unsigned* v) const override { return *v = 16, kSuccess; }
  int remapped_rows(int, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) const override {
    *corr = *unc = *pending = *failure = 0;
    return kSuccess;
  }
  int total_ecc(int, int type, int c, unsigned long long* v) const override {
    if (type != 1 || c != 0) { return kInvalidArgument; }
    return *v = 0, kSuccess;
  }
  // NVLink between every pair: read, write, NVLink and atomics OK; PCI P2P not supported (the H100 box's).
  int p2p_status(int, int, int cap, int* st) const override { return *st = cap == 4 ? 5 : 0, kSuccess; }
};
}  // namespace

const Box& h100x4() {
  static const H100x4 box;
  return box;
}
}  // namespace p2pnode::fake_nvml
