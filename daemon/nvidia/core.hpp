#pragma once
// The OS-agnostic core of an open-gpu-kernel-modules tree: src/nvidia -> nv-kernel.o and
// src/nvidia-modeset -> nv-modeset-kernel.o are compiled without the kernel's headers (NVIDIA's own
// packages ship them prebuilt as kernel-open/*/*.o_binary); only kernel-open/ depends on the kernel.
// Pure: which patches change the core, whether one core can serve every kernel, and its cache key.
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode::nvidia {

// "@@ -12,7 +12,8 @@" -> the old and new line counts (a missing count is 1); false if not a hunk header.
bool hunk_counts(std::string_view line, long& old_n, long& new_n);

// The files a unified diff changes, named as `patch -p1` (DKMS) names them
// ("kernel-open/nvidia/nv-pci.c"); a deleted file by its old name. Empty when it holds no diff.
std::vector<std::string> patched_paths(std::string_view diff);

// A path of the kernel layer (kernel-open/…), which every kernel's build compiles for itself.
bool in_kernel_layer(std::string_view path);

struct CorePatch {
  std::string name;       // as staged: "01-pci-resize-resource-exclude-bars.patch"
  std::string_view text;  // the diff
  std::string match;      // DKMS PATCH_MATCH; "" = every kernel
};

struct CoreDecision {
  bool reuse = false;              // build the core once; every kernel's build links it
  std::vector<std::size_t> apply;  // the patches that change the core: applied before it is built
  std::string why_not;             // !reuse: why each kernel must compile the core itself
};
CoreDecision decide_core(const std::vector<CorePatch>& patches);

// One core per source, patches that change it, compiler, linker and target.
struct CoreInputs {
  std::string source_sha256;
  std::vector<std::string> patch_sha256;  // of the patches in CoreDecision::apply, in order
  std::string compiler, linker, arch;     // first lines of `gcc --version`, `ld --version`; `uname -m`
};
std::string core_key(const CoreInputs& in);

// Where NVIDIA's Makefile builds each object (under dir/_out/<os>_<arch>/) and where kernel-open's
// Kbuild links it from.
struct CoreObject {
  std::string_view dir, object, binary;
};
inline constexpr CoreObject kCoreObjects[] = {
    {"src/nvidia", "nv-kernel.o", "kernel-open/nvidia/nv-kernel.o_binary"},
    {"src/nvidia-modeset", "nv-modeset-kernel.o", "kernel-open/nvidia-modeset/nv-modeset-kernel.o_binary"},
};

}  // namespace p2pnode::nvidia
