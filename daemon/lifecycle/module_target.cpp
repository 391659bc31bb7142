#include "lifecycle/module_target.hpp"

#include "nvidia/breakage.hpp"
#include "nvidia/sha256.hpp"

namespace p2pnode::lifecycle {

ModuleTarget module_target(const DriverSpec& d) {
  ModuleTarget t;
  const ModulePackage pkg = module_package(d);
  t.name = pkg.name;
  t.version = pkg.version;
  t.src_dir = pkg.src_dir();
  t.stamp = std::string(kStateDir) + "/" + pkg.dir_name() + ".json";
  std::string id(kStampFormat);
  if (d.kernel_module) {
    id += "\nsource " + d.kernel_module->artifact.sha256;
    for (const auto& p : d.kernel_module->patches) {
      id +=
          "\npatch " + (p.builtin ? "builtin:" + *p.builtin + " " +
                                        nvidia::sha256_hex(std::string(nvidia::builtin_patch(*p.builtin).value_or("")))
                                  : p.sha256);
    }
    if (!d.kernel_module->nvidia_identity.empty()) {
      id += "\nbuilt against " + d.kernel_module->nvidia_src_dir + " " + d.kernel_module->nvidia_identity;
    }
  }
  t.identity = nvidia::sha256_hex(id);
  return t;
}

std::string failed_log_path(const ModuleTarget& t, const std::string& kernel) {
  return std::string(kStateDir) + "/failed/" + t.name + "/" + t.version + "/" + kernel + "/make.log";
}

}  // namespace p2pnode::lifecycle
