#pragma once
// What is in place of a profile's module, read only: the kernels DKMS can build for, the installed
// copies, p2pnode's stamp of its last install and the inputs a build failed with (a build is not
// tried again with the same ones). install_module (lifecycle/module_install.hpp) writes them.
#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "lifecycle/module_target.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

// Kernels DKMS can build for: /lib/modules/<k> with a build/ directory (headers installed).
std::vector<std::string> kernels_with_headers(const sys::SysRoot& root);

// Read-only: what is missing for the module to be in place ("not installed for 6.1.0-56-amd64", …);
// empty when the stamp, the DKMS tree and the installed files all agree with the profile.
std::vector<std::string> module_gaps(const sys::SysRoot& root, const DriverSpec& d);

// The installed copy of a module for a kernel (its .ko under updates/dkms), in-root; empty if none.
std::string installed_module_path(const sys::SysRoot& root, const std::string& kernel, const std::string& module);

// srcversion from a module's .modinfo section (.ko, .ko.xz or .ko.zst: lifecycle/ko_file.hpp);
// nothing when the file is missing, unreadable or has none.
std::optional<std::string> ko_srcversion(const sys::SysRoot& root, const std::string& ko_path);

// The stamp (ModuleTarget::stamp): the source and patches installed (their identity), for which
// kernels, and the modules they build. Nothing when it is missing or unreadable.
struct Stamp {
  std::string identity;
  std::vector<std::string> kernels, modules;
};
std::optional<Stamp> read_stamp(const sys::SysRoot& root, const std::string& path);

// The stamp lists the kernel, DKMS's tree has it and every module the stamp names is installed.
bool module_in_place(const sys::SysRoot& root, const ModuleTarget& t, const std::optional<Stamp>& stamp,
                     const std::string& kernel);

// What a kernel's build depends on besides the source: the headers' configuration and symbols
// (size and mtime: a new or reinstalled headers package rewrites them).
std::string build_inputs(const sys::SysRoot& root, const ModuleTarget& t, const std::string& kernel);

// Beside a failed build's kept make.log: the inputs it failed with.
std::string inputs_path_of(const ModuleTarget& t, const std::string& kernel);

// A kernel's build failed with these very source, patches and headers: it is not tried again (a
// boot-time apply would otherwise spend the whole build on every boot); new headers or a changed
// profile retry it.
bool failed_with_these_inputs(const sys::SysRoot& root, const ModuleTarget& t, const std::string& kernel);

// The message for such a kernel: where its make.log is, and what retries the build.
std::string not_retried(const ModuleTarget& t, const std::string& kernel);

}  // namespace p2pnode::lifecycle
