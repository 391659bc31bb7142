#include "lifecycle/gdrdrv.hpp"

#include "lifecycle/module_install.hpp"

namespace p2pnode::lifecycle {

std::string gdrdrv_nvidia_src_dir(const DriverSpec& nvidia) {
  return lifecycle::module_target(nvidia).src_dir + "/kernel-open/nvidia";
}

std::optional<DriverSpec> gdrdrv_spec(const Profile& p) {
  if (!p.gdrcopy || !p.driver || !p.driver->kernel_module) { return std::nullopt; }
  DriverSpec d;
  d.version = p.gdrcopy->version;
  ModuleSource m;
  m.name = kGdrdrvPackage;
  m.artifact = p.gdrcopy->source;
  m.nvidia_src_dir = gdrdrv_nvidia_src_dir(*p.driver);
  m.nvidia_identity = lifecycle::module_target(*p.driver).identity;
  d.kernel_module = std::move(m);
  d.conflicts = ConflictPolicy::report;
  d.allow_boot_without_module = p.driver->allow_boot_without_module;
  return d;
}

}  // namespace p2pnode::lifecycle
