#pragma once
// The patched kernel module through DKMS: stage the verified source with a generated dkms.conf,
// build and install it for every kernel with headers, keep what was installed when a build fails.
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.hpp"
#include "core/profile.hpp"
#include "lifecycle/module_target.hpp"
#include "lifecycle/progress.hpp"
#include "sys/command_runner.hpp"
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

// Called once the source is staged, with the breakage table's source tests on it: what would stop
// the build (nvidia/forecast.hpp build_stops); non-empty refuses the install before any build.
using PreflightFn = std::function<std::vector<std::string>(const std::map<std::string, bool>& source_tests)>;

// check → fetch and verify → stage → preflight → (trial build when replacing an install) → dkms
// add/build/install → verify with `dkms status`. Outcome unchanged when nothing was missing.
StepResult install_module(const sys::SysRoot& root, sys::CommandRunner& runner, const DriverSpec& d,
                          const std::string& running_kernel, const ProgressFn& log, const PreflightFn& preflight = {});

}  // namespace p2pnode::lifecycle
