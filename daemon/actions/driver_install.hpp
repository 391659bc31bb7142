#pragma once
// The profile's driver section: the patched module through DKMS, its modprobe options, the
// matching userspace, and a reload when it is safe (else "reboot required").
#include <map>
#include <memory>
#include <string>

#include "actions/action.hpp"

namespace p2pnode::actions {

std::unique_ptr<Action> make_driver_module();     // "driver.module"
std::unique_ptr<Action> make_driver_userspace();  // "driver.userspace"
std::unique_ptr<Action> make_driver_options();    // "driver.options"
std::unique_ptr<Action> make_driver_reload();     // "driver.reload"
std::unique_ptr<Action> make_kernel_hook();       // "driver.kernel_hook" (actions/kernel_hook.cpp)
std::unique_ptr<Action> make_boot_guard();        // "driver.boot_guard" (actions/boot_guard.cpp)

// The kernel-install hook p2pnode writes (daemon/lifecycle/kernel-postinst.sh), twice: a kernel
// image's postinst runs postinst.d, a headers package's runs header_postinst.d, and dpkg may
// configure the image before its headers (neither depends on the other), so the module can only
// be built once the headers' hook runs.
inline constexpr const char* kKernelHook = "/etc/kernel/postinst.d/z50-p2pnode";
inline constexpr const char* kHeaderHook = "/etc/kernel/header_postinst.d/z50-p2pnode";

inline constexpr const char* kModprobeConf = "/etc/modprobe.d/p2pnode-nvidia.conf";

// Pure: the text of /etc/modprobe.d/p2pnode-nvidia.conf for these options (empty map: "").
std::string render_modprobe_conf(const std::map<std::string, std::string>& options);

}  // namespace p2pnode::actions
