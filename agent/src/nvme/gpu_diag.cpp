#include "p2pnode/agent/nvme/gpu_diag.hpp"

#include <cstdio>

namespace p2pnode::agent::nvme {

std::optional<std::pair<int, int>> kernel_major_minor(const std::string& release) {
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) != 2 || major <= 0) { return std::nullopt; }
  return std::make_pair(major, minor);
}

bool kernel_lacks_follow_pfn(const std::string& release) {
  const auto v = kernel_major_minor(release);
  return v && (v->first > 6 || (v->first == 6 && v->second >= 10));
}

RegisterDiagnosis diagnose_register_failure(const RegisterFailureFacts& f) {
  const std::string what =
      "cudaHostRegister(BAR0 doorbell page, cudaHostRegisterIoMemory|cudaHostRegisterMapped) failed" +
      (f.cuda_error.empty() ? std::string() : " with " + f.cuda_error);
  const std::string module =
      f.module_version.empty() ? std::string("the NVIDIA module") : "NVIDIA module " + f.module_version;
  if (f.libcuda_missing) {
    return {"libcuda", what +
                           ": libcuda.so.1 (the CUDA driver library) could not be loaded; install the NVIDIA "
                           "userspace driver matching " +
                           module};
  }
  if (f.iommu_translating) {
    return {"platform_iommu",
            what +
                ": the IOMMU translates DMA on this box (the drive is in a VFIO type1 container), so the GPU's "
                "writes to another device's BAR must be mapped through it and " +
                module +
                " does not do that for I/O memory; boot with the IOMMU off or in passthrough (iommu=pt, or "
                "amd_iommu=off as in seed 002) and bind the drive in noiommu mode (nvme.noiommu: true)" +
                (kernel_lacks_follow_pfn(f.kernel_release) ? "; kernel " + f.kernel_release +
                                                                 " also has no follow_pfn(), so the module needs the "
                                                                 "builtin DKMS patch io-memory-pfn as well"
                                                           : std::string())};
  }
  if (kernel_lacks_follow_pfn(f.kernel_release)) {
    return {"module_io_memory_pfn",
            what + ": kernel " + f.kernel_release + " has no follow_pfn() (removed in 6.10) and " + module +
                " has no fallback, so it cannot resolve the PFN of a VM_PFNMAP (PCI BAR) mapping; rebuild it with "
                "p2pnode's builtin DKMS patch (profile driver.module.patches: [{builtin: io-memory-pfn}]), which "
                "computes the PFN from vm_pgoff"};
  }
  return {"unknown", what + " on kernel " + (f.kernel_release.empty() ? std::string("(unknown)") : f.kernel_release) +
                         ", which still has follow_pfn(), with the IOMMU off: " + module +
                         " or libcuda refused the I/O-memory registration (seed 002 saw libcuda reject it on one "
                         "module build and accept it on another); check that the module is the open one and "
                         "matches libcuda"};
}

}  // namespace p2pnode::agent::nvme
