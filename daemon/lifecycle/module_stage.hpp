#pragma once
// Staging a module source for DKMS: the verified tree (copied or unpacked) and its patches in a
// directory of p2pnode's state, with the dkms.conf written for it, before anything in /usr/src or
// DKMS changes. For an NVIDIA open tree it also decides whether the kernel-independent core can be
// built once for every kernel (nvidia/core.hpp).
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "core/result.hpp"
#include "dkms/conf.hpp"
#include "lifecycle/artifact.hpp"
#include "lifecycle/module_target.hpp"
#include "nvidia/core.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

// A patch to stage: a verified file, or the text of a builtin one with the kernels it is for.
struct PatchFile {
  std::string from;   // in-root path of the fetched file ("" for a builtin)
  std::string text;   // a builtin's text
  std::string match;  // DKMS PATCH_MATCH ("" = every kernel)
};

struct Staged {
  std::string dir;  // in-root staging directory (…/stage/<name>-<version>)
  dkms::TreeKind kind = dkms::TreeKind::kbuild;
  std::vector<std::string> modules;
  std::vector<std::string> patches;  // in-root paths of the staged patches, in order
  nvidia::CoreDecision core;         // NVIDIA open tree: whether the core is built once (dkms.conf says so)
  std::string conf_text;
};

// Copies (or unpacks) the verified source and patches into the staging directory and writes dkms.conf.
Result<Staged> stage(const sys::SysRoot& root, sys::CommandRunner& runner, const DriverSpec& d, const ModuleTarget& t,
                     const Fetched& src, const std::vector<PatchFile>& patches);

}  // namespace p2pnode::lifecycle
