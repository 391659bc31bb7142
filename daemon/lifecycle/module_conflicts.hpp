#pragma once
// What else could provide our modules: other DKMS packages that build a module of the same name, and
// stale copies outside updates/dkms that modprobe could pick instead of DKMS's. Reads only.
#include <string>
#include <utility>
#include <vector>

#include "lifecycle/module_target.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

// DKMS registrations (name, version) other than `t` whose dkms.conf builds one of `modules`, or
// another version of t's own package.
std::vector<std::pair<std::string, std::string>> other_registrations(const sys::SysRoot& root, const ModuleTarget& t,
                                                                     const std::vector<std::string>& modules);
// In-root paths of files named like one of `modules` (.ko, .ko.xz, .ko.zst, .ko.gz) under each
// kernel's /lib/modules, outside updates/dkms, build/ and source/.
std::vector<std::string> stale_modules(const sys::SysRoot& root, const std::vector<std::string>& modules,
                                       const std::vector<std::string>& kernels);
// BUILT_MODULE_NAME values of a dkms.conf.
std::vector<std::string> built_names(std::string_view conf);

}  // namespace p2pnode::lifecycle
