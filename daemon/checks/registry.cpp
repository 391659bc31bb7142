#include "checks/check.hpp"

namespace p2pnode::checks {

const std::vector<CheckDef>& all_checks() {
  static const std::vector<CheckDef> list{
      {"sysfs.attributes", "sysfs attributes of GPUs, NVMe and bridges are readable and well formed", check_sysfs},
      {"gpu.models",
       "GPU models that peer (one model, or one generation from 595.71.05-p2p), as many and of the device ids the "
       "profile names",
       check_gpu_models},
      {"rebar.aperture", "each GPU's VRAM aperture covers VRAM + 128 KiB", check_rebar_aperture},
      {"rebar.capability", "the Resizable BAR capability: supported versus current sizes", check_rebar_capability},
      {"iommu.mode", "IOMMU off or passthrough as the profile asks", check_iommu_mode},
      {"iommu.noiommu_support", "the kernel offers vfio noiommu when the profile needs it", check_iommu_noiommu},
      {"pcie.acs", "no ACS redirect or egress control between peers", check_pcie_acs},
      {"pcie.link", "links trained at their maximum and the profile's minimum", check_pcie_link},
      {"pcie.topology", "pairwise PCIe topology versus the profile", check_pcie_topology},
      {"driver.state", "NVIDIA kernel module and userspace versions and options", check_driver_state},
      {"driver.branch", "the driver branch can drive every GPU's architecture (checked before any download or build)",
       check_driver_branch},
      {"platform.peer_alignment",
       "the module tree accepts the peer DMA address where the platform offsets it (AMD client root complexes)",
       check_peer_alignment},
      {"secureboot.module_signing",
       "with Secure Boot on, the kernel trusts the key DKMS signs the module with (checked before any download or "
       "build)",
       check_secure_boot},
      {"driver.kernels",
       "the profile's module is built and installed by DKMS for every installed kernel, above all the next boot one",
       check_driver_kernels},
      {"driver.boot_guard", "GRUB does not boot a kernel without the module (p2pnode holds it on one that has it)",
       check_boot_guard},
      {"gdrcopy.bar1", "each GPU's BAR1 holds what gdrcopy pins (gdrcopy.pin) beside the driver's 36 MiB reserve",
       check_gdrcopy_bar1},
      {"gdrcopy.flavour", "the open NVIDIA module runs, the one gdrdrv is built for", check_gdrcopy_flavour},
      {"gdrcopy.backend",
       "gdrcopy has a backend: gdrdrv loaded with /dev/gdrdrv as the profile asks, or the driver's dma-buf",
       check_gdrcopy_backend},
      {"gdrcopy.kernels", "gdrdrv is built and installed by DKMS for every installed kernel", check_gdrcopy_kernels},
      {"nvme.binding", "NVMe drives on vfio-pci are in D0 with power/control on and Memory+BusMaster",
       check_nvme_binding},
  };
  return list;
}

std::vector<Finding> run_all_checks(const Profile& profile, const Inventory& inv) {
  std::vector<Finding> out;
  for (const auto& c : all_checks()) {
    auto f = c.run(profile, inv);
    out.insert(out.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
  }
  return out;
}

Finding make_finding(std::string_view check, std::string subject, Severity sev, std::string summary) {
  Finding f;
  f.check = std::string(check);
  f.subject = std::move(subject);
  f.severity = sev;
  f.summary = std::move(summary);
  return f;
}

bool is_amd_platform(const Inventory& inv) {
  for (const auto& u : inv.iommu.units) {
    if (u.rfind("ivhd", 0) == 0) { return true; }
  }
  for (const auto& t : inv.iommu.acpi_tables) {
    if (t == "IVRS") { return true; }
  }
  for (const auto& d : inv.devices) {
    if (d.kind == DeviceKind::host_bridge && d.vendor == 0x1022) { return true; }
  }
  return false;
}

}  // namespace p2pnode::checks
