// Why a GPU could not register an NVMe drive's BAR0 doorbell page (cudaHostRegister with
// cudaHostRegisterIoMemory), named from facts the agent reads: the CUDA error, the kernel release,
// the NVIDIA module's version, whether the IOMMU translates. Pure. Seed 002: on kernels without
// follow_pfn() (gone since 6.10) NVIDIA's os_lookup_user_io_memory() cannot resolve a VM_PFNMAP
// mapping unless the module computes the PFN from vm_pgoff (p2pnode's builtin DKMS patch
// `io-memory-pfn`); libcuda then reports "invalid argument".
#pragma once

#include <optional>
#include <string>

namespace p2pnode::agent::nvme {

struct RegisterFailureFacts {
  std::string cuda_error;          // cudaGetErrorName of cudaHostRegister, e.g. "cudaErrorInvalidValue"
  std::string kernel_release;      // /proc/sys/kernel/osrelease, e.g. "6.17.0-14-generic"
  std::string module_version;      // /sys/module/nvidia/version ("" when unreadable)
  bool iommu_translating = false;  // the drive sits in a VFIO type1 container
  bool libcuda_missing = false;    // the CUDA driver could not be loaded at all
};

struct RegisterDiagnosis {
  std::string cause;   // "module_io_memory_pfn", "platform_iommu", "libcuda", "unknown"
  std::string reason;  // for a person: what failed, why, and what to do
};

// Kernel release "6.17.0-14-generic" -> {6, 17}; nullopt when unreadable.
std::optional<std::pair<int, int>> kernel_major_minor(const std::string& release);
// follow_pfn() left the kernel in 6.10.
bool kernel_lacks_follow_pfn(const std::string& release);

RegisterDiagnosis diagnose_register_failure(const RegisterFailureFacts& f);

}  // namespace p2pnode::agent::nvme
