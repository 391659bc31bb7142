#pragma once
// The kernel's own modules (modules.builtin and the kernel/ tree under /lib/modules/<kernel>): a
// module p2pnode builds must not take one of their names. DKMS installs into updates/, which
// modprobe prefers, so a tree with `obj-m := nvme.o` would replace the boot drive's driver, and
// `conflicts: remove` would move the distribution's nvme.ko aside. NVIDIA's module names and
// gdrdrv stay allowed (Ubuntu ships NVIDIA modules in its kernel tree; they are what p2pnode builds).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

// The name modprobe knows a module file by: "nvme-core.ko.xz" -> "nvme_core" ('-' and '_' are one
// to the kernel). Pure.
std::string kernel_module_name(std::string_view file_name);
// A module name the kernel accepts: letters, digits, '_' and '-', at most 55 (MODULE_NAME_LEN - 1).
bool is_kernel_module_name(std::string_view name);

// The kernel's own modules by kernel_module_name, each with where it was found
// ("/lib/modules/<k>/kernel/drivers/nvme/host/nvme.ko", "/lib/modules/<k>/modules.builtin: kernel/fs/ext4/ext4.ko").
std::map<std::string, std::string> kernel_own_modules(const sys::SysRoot& root, const std::string& kernel);

// Refuses a module of `modules` (as the tree builds them) that is one of the kernel's own for any of
// `kernels`, or that is no kernel module name at all; the error names the module, the kernel and
// where its own copy is.
Status refuse_kernel_own_modules(const sys::SysRoot& root, const std::vector<std::string>& modules,
                                 const std::vector<std::string>& kernels);

}  // namespace p2pnode::lifecycle
