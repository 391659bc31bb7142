#include "checks/check.hpp"
#include "core/iommu_policy.hpp"

namespace p2pnode::checks {

namespace {

std::string how_to_change(IommuPolicy want, bool amd) {
  const std::string off_arg = amd ? "amd_iommu=off" : "intel_iommu=off";
  const std::string bios = amd ? "IOMMU (AMD-Vi) to Disabled" : "VT-d to Disabled";
  const std::string grub = " to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub and reboot";
  if (want == IommuPolicy::off) {
    return "Turn the IOMMU off: set " + bios + " in the BIOS, or add " + off_arg + grub + ".";
  }
  return "Put the IOMMU in passthrough: add iommu=pt" + grub + " (or turn it off: " + off_arg + ", or " + bios +
         " in the BIOS).";
}
}  // namespace

std::vector<Finding> check_iommu_mode(const Profile& p, const Inventory& inv) {
  const IommuState& s = inv.iommu;
  Finding f = make_finding("iommu.mode", "node", Severity::ok, "");
  f.observed = {{"mode", to_string(s.mode)},
                {"evidence", s.evidence},
                {"cmdline", s.cmdline_args},
                {"units", s.units},
                {"acpi_tables", s.acpi_tables}};
  f.expected = to_string(p.platform.iommu);
  const bool amd = is_amd_platform(inv);
  if (s.mode == IommuMode::unknown) {
    f.severity = Severity::warning;
    f.summary = "could not tell the IOMMU mode";
    return {f};
  }
  if (iommu_allowed(p.platform.iommu, s.mode)) {
    f.summary = std::string("IOMMU is ") + to_string(s.mode);
    return {f};
  }
  f.severity = Severity::error;
  f.summary = std::string("IOMMU is ") + to_string(s.mode) + ", the profile wants " + to_string(p.platform.iommu);
  f.remediation =
      how_to_change(p.platform.iommu == IommuPolicy::off ? IommuPolicy::off : IommuPolicy::passthrough, amd);
  if (s.mode == IommuMode::translating) {
    f.remediation +=
        " A translating IOMMU remaps each peer's BAR1 address; the patched driver needs that "
        "DMA address 512 MiB aligned and the remapped one was not on X570/AM5 boards, which "
        "gives IO page faults and copies of zeros or NaN.";
  }
  return {f};
}

std::vector<Finding> check_iommu_noiommu(const Profile& p, const Inventory& inv) {
  if (!p.nvme || !p.nvme->noiommu) { return {}; }
  bool wants_vfio = false;
  for (const auto& d : p.nvme->drives) { wants_vfio |= d.driver == "vfio-pci"; }
  if (!wants_vfio) { return {}; }
  const KernelInfo& k = inv.kernel;
  Finding f = make_finding("iommu.noiommu_support", "node", Severity::ok, "");
  f.expected = "CONFIG_VFIO_NOIOMMU=y (vfio's enable_unsafe_noiommu_mode parameter)";
  f.observed = {{"kernel", k.release}, {"distro", k.distro}};
  if (k.vfio_noiommu_param) { f.observed["vfio_parameter_present"] = *k.vfio_noiommu_param; }
  if (k.noiommu_configured) { f.observed["config_vfio_noiommu"] = *k.noiommu_configured; }
  const bool has = k.vfio_noiommu_param.value_or(false) || k.noiommu_configured.value_or(false);
  const bool lacks =
      (k.vfio_noiommu_param && !*k.vfio_noiommu_param) || (k.noiommu_configured && !*k.noiommu_configured);
  if (inv.iommu.mode != IommuMode::off) {
    f.summary = "the IOMMU is on, so vfio-pci binds without noiommu mode";
    f.severity = Severity::warning;
    f.remediation = "Set nvme.noiommu: false in the profile: with an IOMMU present noiommu mode is not used.";
    return {f};
  }
  if (has) {
    f.summary = "kernel " + k.release + " offers vfio noiommu mode";
    return {f};
  }
  const std::string kernels = " Ubuntu's kernels are built with CONFIG_VFIO_NOIOMMU=y; Debian's are not.";
  if (lacks) {
    f.severity = Severity::error;
    f.summary = "kernel " + k.release + " has no vfio noiommu mode (CONFIG_VFIO_NOIOMMU is not set)";
    f.remediation =
        "Boot a kernel built with CONFIG_VFIO_NOIOMMU=y, or enable the IOMMU in passthrough "
        "(iommu=pt) and set nvme.noiommu: false." +
        kernels;
  } else {
    f.severity = Severity::warning;
    f.summary =
        "cannot tell whether kernel " + k.release + " offers vfio noiommu mode (vfio not loaded, no /boot/config)";
    f.remediation =
        "Load vfio (modprobe vfio) and check that /sys/module/vfio/parameters/enable_unsafe_noiommu_mode exists." +
        kernels;
  }
  return {f};
}

}  // namespace p2pnode::checks
