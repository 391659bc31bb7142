#include "gdrcopy/needs.hpp"

#include <map>

#include "nvidia/gpu_arch.hpp"

namespace p2pnode::gdrcopy {

Bytes pinnable(Bytes aperture) { return aperture > kBar1Reserve ? (aperture - kBar1Reserve) / kGpuPage * kGpuPage : 0; }

Bytes pin_footprint(Bytes bytes) { return (bytes + kGpuPage - 1) / kGpuPage * kGpuPage; }

DmaBufVerdict dmabuf_support(const std::string& driver_version) {
  // The CUDA version each production branch's driver reports (nvidia-smi's "CUDA Version").
  static const std::map<int, std::string> kCuda{{550, "12.4"}, {555, "12.5"}, {560, "12.6"}, {565, "12.7"},
                                                {570, "12.8"}, {575, "12.9"}, {580, "13.0"}, {590, "13.1"}};
  const int branch = driver_branch_of(driver_version);
  DmaBufVerdict v;
  if (branch == 0 || driver_version.find_first_not_of("0123456789.") != std::string::npos) {
    v.why = "the driver's version is not known";
    return v;
  }
  if (auto it = kCuda.find(branch); it != kCuda.end()) {
    v.support = DmaBuf::unavailable;
    v.cuda = it->second;
    v.why = "driver " + driver_version + " (CUDA " + it->second +
            ") is older than the CUDA 13.3 gdrcopy's dma-buf backend needs";
  } else if (branch < kCuda.rbegin()->first) {  // branches report rising CUDA versions
    v.support = DmaBuf::unavailable;
    v.why = "driver " + driver_version +
            " (a branch before 590's CUDA 13.1) is older than the CUDA 13.3 gdrcopy's dma-buf "
            "backend needs";
  } else {
    v.why = "driver " + driver_version +
            " is of a branch after 590 (CUDA 13.1): whether it offers the dma-buf backend (CUDA 13.3 "
            "and a GPU that reports dma-buf support) cannot be told from its version";
  }
  return v;
}

}  // namespace p2pnode::gdrcopy
