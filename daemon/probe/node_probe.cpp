#include <algorithm>

#include "pci/iommu.hpp"
#include "probe/nvme.hpp"
#include "probe/probe.hpp"

namespace p2pnode::probe {
using sys::join;

IommuState probe_iommu(const sys::SysRoot& root) {
  IommuState s;
  s.units = root.list_dir("/sys/class/iommu");
  for (const char* t : {"DMAR", "IVRS"}) {
    if (root.exists(join("/sys/firmware/acpi/tables", t))) { s.acpi_tables.emplace_back(t); }
  }
  s.cmdline_args = pci::iommu_cmdline_args(root.read_attr("/proc/cmdline").value_or(""));
  for (const auto& g : root.list_dir("/sys/kernel/iommu_groups")) {
    ++s.group_count;
    if (auto type = root.read_attr(join("/sys/kernel/iommu_groups", g, "type"))) { ++s.group_types[*type]; }
  }
  for (const auto& v : root.list_dir("/dev/vfio")) {
    if (v.rfind("noiommu-", 0) == 0) { s.noiommu_groups = true; }
  }
  pci::decide_iommu_mode(s);
  return s;
}

KernelInfo probe_kernel(const sys::SysRoot& root) {
  KernelInfo k;
  k.release = root.read_attr("/proc/sys/kernel/osrelease").value_or("");
  k.version = root.read_attr("/proc/version").value_or("");
  k.cmdline = root.read_attr("/proc/cmdline").value_or("");
  if (root.is_dir("/sys/module/vfio")) {
    k.vfio_noiommu_param = root.exists("/sys/module/vfio/parameters/enable_unsafe_noiommu_mode");
  }
  if (!k.release.empty()) {
    if (auto cfg = root.read_text(join("/boot", "config-" + k.release), 16 << 20)) {
      k.noiommu_configured = cfg->find("\nCONFIG_VFIO_NOIOMMU=y") != std::string::npos;
    }
  }
  if (auto os = root.read_text("/etc/os-release")) {
    const auto pos = os->find("\nID=") != std::string::npos ? os->find("\nID=") + 1
                                                            : (os->rfind("ID=", 0) == 0 ? 0 : std::string::npos);
    if (pos != std::string::npos) {
      auto end = os->find('\n', pos);
      std::string id = os->substr(pos + 3, end == std::string::npos ? std::string::npos : end - pos - 3);
      id.erase(std::remove(id.begin(), id.end(), '"'), id.end());
      k.distro = id;
    }
  }
  return k;
}

Inventory probe_inventory(const sys::SysRoot& root) {
  Inventory inv;
  inv.hostname = root.read_attr("/etc/hostname").value_or("");
  if (inv.hostname.empty()) { inv.hostname = root.read_attr("/proc/sys/kernel/hostname").value_or(""); }
  for (const char* f : {"sys_vendor", "product_name", "board_vendor", "board_name", "bios_version"}) {
    if (auto v = root.read_attr(join("/sys/class/dmi/id", f))) { inv.dmi[f] = *v; }
  }
  inv.kernel = probe_kernel(root);
  inv.iommu = probe_iommu(root);
  inv.nvidia = probe_nvidia_driver(root);
  inv.gdrdrv = probe_gdrdrv(root);
  inv.kernels = probe_kernels(root, inv.kernel.release);
  inv.secure_boot = probe_secure_boot(root);
  inv.devices = probe_pci_devices(root);
  inv.nvme_identities = probe_nvme_identities(root);
  for (const auto& c : inv.nvme_identities) {
    if (c.driver == "nvme") { inv.nvme_usage.push_back(probe_nvme_usage(root, c.bdf)); }
  }
  if (!root.is_dir("/sys/bus/pci/devices")) {
    inv.problems.push_back("/sys/bus/pci/devices does not exist under " + root.root().string() +
                           ": not a Linux system root (is --root right?)");
  }
  return inv;
}

}  // namespace p2pnode::probe
