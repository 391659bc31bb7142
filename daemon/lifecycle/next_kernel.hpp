#pragma once
// The kernel apt would install next, judged before it is installed: its headers packages are
// downloaded into p2pnode's cache (`apt-get download`, `dpkg-deb -x`: nothing installed, the host's
// apt state and /lib/modules untouched), and the profile's module tree, as DKMS staged it in
// /usr/src (its patches with their PATCH_MATCH, the cached core as *.o_binary), is built there at
// low CPU priority. The verdict: keeps P2P, or the known breakage and the builtin patch that fixes
// it, or the compiler's first error. Recorded in /var/lib/p2pnode/next-kernel.json.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.hpp"
#include "core/result.hpp"
#include "lifecycle/module_install.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

inline constexpr std::string_view kKernelCacheDir = "/var/cache/p2pnode/kernels";
inline constexpr std::string_view kNextKernelRecord = "/var/lib/p2pnode/next-kernel.json";

// --- pure decoders -----------------------------------------------------------------------------
struct AptPolicy {
  std::string installed, candidate;  // "" for "(none)"
};
// `apt-cache policy A B …` -> {A: {installed, candidate}, …}
std::map<std::string, AptPolicy> parse_apt_policy(std::string_view text);
// `apt-cache depends P` -> the packages of its Depends lines (first alternative; <virtual> left out).
std::vector<std::string> parse_apt_depends(std::string_view text);
// "linux-image-6.1.0-56-amd64" (or -unsigned) -> "6.1.0-56-amd64"; "" when it names no release.
std::string release_of_image_package(std::string_view package);
struct DkmsPatch {
  std::string file;   // under <source>/patches/
  std::string match;  // PATCH_MATCH regex, "" = every kernel
};
// PATCH[i] / PATCH_MATCH[i] of a dkms.conf, in index order.
std::vector<DkmsPatch> parse_dkms_patches(std::string_view conf_text);

// --- the judgement -----------------------------------------------------------------------------
struct NextKernel {
  std::string meta;        // linux-image-amd64
  std::string version;     // the metapackage's candidate: 6.1.192-2
  std::string release;     // 6.1.0-56-amd64
  bool installed = false;  // /lib/modules/<release> exists already (driver.kernels judges it)
};
// The candidate of the installed kernel metapackage (linux-image-amd64, -cloud-amd64, -rt-amd64,
// linux-image-generic), through apt-cache (read-only). nullopt when no metapackage is installed.
Result<std::optional<NextKernel>> find_next_kernel(const sys::SysRoot& root, sys::CommandRunner& runner);

struct KernelVerdict {
  std::string release, package_version;
  std::string module;  // nvidia-p2p/550.90.07
  bool keeps_p2p = false;
  std::string summary;                       // one line: "the next kernel X keeps P2P" / what breaks
  std::vector<std::string> breakages;        // known breakage ids the build log matches
  std::vector<std::string> fixes;            // their builtin patches
  std::vector<std::string> patches_applied;  // the staged patches whose PATCH_MATCH took this kernel
  std::string first_error;
  std::string make_log;  // in-root
  double build_seconds = 0;
  std::string core;           // "cached core linked" / why the link was not checked
  std::string staged_sha256;  // of the staged dkms.conf and patches: a changed profile is judged again
};
nlohmann::json to_json(const KernelVerdict& v);
Result<KernelVerdict> verdict_from_json(const nlohmann::json& j);

// sha256 of the staged tree's dkms.conf and patches/ (what decides the build for a new kernel).
std::string staged_fingerprint(const sys::SysRoot& root, const DriverSpec& d);

struct JudgeOptions {
  std::vector<std::string> modules;  // NV_KERNEL_MODULES; empty: every module of the tree
  int nice = 19;
  std::string jobs = "2";
};

// Downloads and unpacks linux-headers-<release> (+ -common, linux-kbuild) at `version` into
// kKernelCacheDir/<release>/root (reused when already there); returns {build dir, source dir} in-root.
Result<std::pair<std::string, std::string>> fetch_kernel_headers(const sys::SysRoot& root, sys::CommandRunner& runner,
                                                                 const std::string& release, const std::string& version,
                                                                 const ProgressFn& log);

// Builds the profile's staged tree (/usr/src/<name>-<version>) for `release` against the fetched
// headers, in a scratch copy, under the package's build lock, at `nice`. A build failure is a verdict,
// not an error; errors are what kept it from judging (no staged tree, no headers, …).
Result<KernelVerdict> judge_kernel(const sys::SysRoot& root, sys::CommandRunner& runner, const DriverSpec& d,
                                   const std::string& release, const std::string& version, const JudgeOptions& opt,
                                   const ProgressFn& log);

}  // namespace p2pnode::lifecycle
