#pragma once
// The kernel-independent core of an NVIDIA open tree (nvidia/core.hpp), built once and linked by
// every kernel's DKMS build: it is placed in the staged source as kernel-open/*/*.o_binary (as
// NVIDIA's own packages ship it), so p2pnode's builds, the kernel hook's and an operator's `dkms install`
// all compile kernel-open/ only. Kept in a cache per key (source, core patches, compiler, target).
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "lifecycle/dkms_run.hpp"
#include "lifecycle/module_stage.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

inline constexpr std::string_view kCoreCacheDir = "/var/cache/p2pnode/nvidia-core";
inline constexpr std::size_t kCoreCacheKeep = 2;  // cores kept (the newest); each is ~70 MB

struct CoreProvided {
  std::string key;          // sha256 of the inputs (core_key)
  bool from_cache = false;  // false: built by this call
  std::string message;      // "built in 183.4 s (…)" or "reused from …"
};

// Puts the core into the staged tree (staged.core.reuse must be true): from the cache when a core
// with the same key is there and its objects still hash as recorded, else built in a scratch copy
// of the staged tree with the patches that change it, its output in `log_path` (in-root), then kept
// in the cache. A failure changes nothing outside p2pnode's state and cache.
Result<CoreProvided> provide_core(const sys::SysRoot& root, Runner& run, const Staged& staged,
                                  const std::string& source_sha256, const std::string& log_path);

}  // namespace p2pnode::lifecycle
