#pragma once
// probe_*: read the machine through a SysRoot and never change it.
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::probe {

// Every PCI device under /sys/bus/pci/devices with its attributes, config space, path to the
// root complex and capabilities. Unreadable or garbage attributes become entries in problems.
std::vector<PciDevice> probe_pci_devices(const sys::SysRoot& root);
PciDevice probe_pci_device(const sys::SysRoot& root, const std::string& bdf);
IommuState probe_iommu(const sys::SysRoot& root);
KernelInfo probe_kernel(const sys::SysRoot& root);
NvidiaDriverState probe_nvidia_driver(const sys::SysRoot& root);
GdrdrvState probe_gdrdrv(const sys::SysRoot& root);
// Installed kernels (/lib/modules), the next boot one (lifecycle::next_boot_kernel) and, per kernel,
// the DKMS packages built and installed for it and the failed builds p2pnode kept a make.log of.
KernelsState probe_kernels(const sys::SysRoot& root, const std::string& running_kernel);
// Secure Boot (efivars), the kernel's lockdown and signature enforcement, DKMS's signing key and
// whether shim has it enrolled (MokListRT) or queued (MokNew).
// With `profile_key`, the key the profile names instead of DKMS's configured one (apply points DKMS
// at it): use_profile_signing() re-reads the state so for a profile that names one.
SecureBootState probe_secure_boot(const sys::SysRoot& root, const ModuleSigning* profile_key = nullptr);
void use_profile_signing(const sys::SysRoot& root, const Profile& p, Inventory& inv);
// The profile's module tree where it already lies on the machine (a path: folder, or p2pnode's git
// checkout of its git: source), its source tests read as apply reads a staged tree, so `check`
// forecasts from the source and says so. Tarballs are not unpacked: their version decides.
void use_profile_tree(const sys::SysRoot& root, const Profile& p, Inventory& inv);
// When the files named no libcuda (no ld.so.cache entry, none in the default directories): asks
// `ldconfig -p`, then nvidia-smi, through the runner (read-only programs; the daemon's runner for
// the real root only). Leaves `s` as it is when it already has a userspace version.
void probe_userspace_by_commands(const sys::SysRoot& root, sys::CommandRunner& runner, NvidiaDriverState& s);
// Where a driver is loaded and no agent result said it: each GPU's VRAM from `nvidia-smi
// --query-gpu=pci.bus_id,memory.total` (read-only) into inv.gpu_memory. A failed or garbled answer
// leaves it empty and says why in inv.gpu_memory_source.
void probe_gpu_memory_by_commands(sys::CommandRunner& runner, Inventory& inv);
// Where Secure Boot enforces module signatures: whether each DKMS module installed for each kernel
// is signed (`modinfo -F signer` on its host path, which reads .ko, .ko.xz and .ko.zst alike;
// read-only), into
// DkmsOnKernel::signed_modules. Nothing runs on nodes that load modules unsigned.
void probe_module_signatures_by_commands(const sys::SysRoot& root, sys::CommandRunner& runner, Inventory& inv);
Inventory probe_inventory(const sys::SysRoot& root);

}  // namespace p2pnode::probe
