#pragma once
// Before any build: the staged patches tried in order, as DKMS will apply them (patch -p1), on a
// scratch copy of the files they touch, so that a patch made for another release stops `apply`
// with the hunk that failed instead of failing a DKMS build after the old module was removed.
#include <string>

#include "core/result.hpp"
#include "lifecycle/dkms_run.hpp"
#include "lifecycle/module_stage.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

// `tree` names the staged source in the message ("NVIDIA 595.45.04"); `listed` is the profile's
// driver.kernel_module.patches, in the staged order. Every patch is tried, for every kernel (DKMS's
// PATCH_MATCH narrows some to newer kernels; each must still fit the tree). A profile's own patch
// must apply with no fuzz: a hunk whose context moved can land in the wrong function (a P2P patch
// for one release does so on another) while DKMS, which allows fuzz 2, would take it. p2pnode's
// builtin patches are small, conftest-guarded and proven on each tree they name: DKMS's rule.
Status check_patches_apply(const sys::SysRoot& root, Runner& run, const Staged& s, const std::vector<Artifact>& listed,
                           const std::string& tree);

}  // namespace p2pnode::lifecycle
