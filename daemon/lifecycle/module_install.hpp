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
#include "lifecycle/module_state.hpp"
#include "lifecycle/module_target.hpp"
#include "lifecycle/progress.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

// Called once the source is staged, with the breakage table's source tests on it: what would stop
// the build (nvidia/forecast.hpp build_stops); non-empty refuses the install before any build.
using PreflightFn = std::function<std::vector<std::string>(const std::map<std::string, bool>& source_tests)>;

// check → fetch and verify → stage → preflight → (trial build when replacing an install) → dkms
// add/build/install → verify with `dkms status`. Outcome unchanged when nothing was missing.
StepResult install_module(const sys::SysRoot& root, sys::CommandRunner& runner, const DriverSpec& d,
                          const std::string& running_kernel, const ProgressFn& log, const PreflightFn& preflight = {});

}  // namespace p2pnode::lifecycle
