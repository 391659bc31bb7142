#pragma once
// When the NVIDIA modules may be swapped under a running box, and in which order.
// find_holders() reads /proc; decide_reload() is pure.
#include <optional>
#include <string>
#include <vector>

#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

// Unload order: users of nvidia first (gdrcopy's gdrdrv, peermem, drm → modeset, uvm), nvidia last.
// Load is the reverse (gdrdrv by gdrcopy.device, after the reload).
inline const std::vector<std::string> kUnloadOrder = {"gdrdrv",         "nvidia_peermem", "nvidia_drm",
                                                      "nvidia_modeset", "nvidia_uvm",     "nvidia"};

struct Holder {
  int pid = 0;
  std::string comm;                // /proc/<pid>/comm
  std::vector<std::string> files;  // the /dev/nvidia* it holds open
};

// Processes with a device under `prefix` open (/dev/nvidia*; /dev/nvme* for drives), from
// /proc/<pid>/fd/* links (pids sorted).
std::vector<Holder> find_holders(const sys::SysRoot& root, std::string_view prefix = "/dev/nvidia");
std::string describe(const std::vector<Holder>& holders);  // "1234 (python3), 99 (nvidia-persiste)"

struct ReloadInputs {
  std::vector<std::string> loaded;            // modules loaded now (/sys/module)
  std::optional<std::string> loaded_version;  // /sys/module/nvidia/version
  std::optional<std::string> loaded_srcversion;
  std::optional<std::string> disk_version;     // modinfo -F version nvidia
  std::optional<std::string> disk_srcversion;  // modinfo -F srcversion nvidia
  std::string wanted_version;                  // the profile's
  bool allow_reload = false;
  bool allow_kill_holders = false;
  // The remediation ladder's reload_module rung: reload although the loaded module is the wanted one
  // (the profile allowed the rung, so driver.reload.allow is not asked again).
  bool force = false;
  std::vector<Holder> holders;  // seen after stopping the profile's units
  // Where a module p2pnode built is installed: nothing for the running kernel (disk_version unset)
  // means a reboot can only help if the next boot kernel has one.
  std::string running_kernel, next_boot_kernel;
  std::vector<std::string> kernels_with_module;
};

// nothing_built: no module of the wanted version is installed for the running kernel nor for the
// next boot kernel; neither a load nor a reboot would bring it (driver.module must succeed first).
enum class ReloadKind { not_needed, load, reload, reboot_required, refused, nothing_built };
const char* to_string(ReloadKind k);

struct ReloadDecision {
  ReloadKind kind = ReloadKind::not_needed;
  std::string reason;
  std::vector<std::string> unload;  // the loaded ones, in kUnloadOrder
  std::vector<int> kill;            // holders to stop first (allow_kill_holders)
};

ReloadDecision decide_reload(const ReloadInputs& in);

}  // namespace p2pnode::lifecycle
