#include "lifecycle/reload.hpp"

#include <algorithm>
#include <charconv>

namespace p2pnode::lifecycle {

std::vector<Holder> find_holders(const sys::SysRoot& root, std::string_view prefix) {
  std::vector<std::pair<int, std::string>> pids;
  for (const auto& e : root.list_dir("/proc")) {
    int pid = 0;
    const auto [end, ec] = std::from_chars(e.data(), e.data() + e.size(), pid);
    if (e.empty() || ec != std::errc() || end != e.data() + e.size() || pid <= 0) {
      continue;  // not a pid (or junk)
    }
    pids.emplace_back(pid, e);
  }
  std::sort(pids.begin(), pids.end());
  std::vector<Holder> out;
  for (const auto& [pid, name] : pids) {
    Holder h;
    h.pid = pid;
    const std::string fd_dir = sys::join("/proc", name, "fd");
    for (const auto& fd : root.list_dir(fd_dir)) {
      auto target = root.read_link(sys::join(fd_dir, fd));
      if (target && target->rfind(prefix, 0) == 0 &&
          std::find(h.files.begin(), h.files.end(), *target) == h.files.end()) {
        h.files.push_back(*target);
      }
    }
    if (h.files.empty()) { continue; }
    h.comm = root.read_attr(sys::join("/proc", name, "comm")).value_or("?");
    out.push_back(std::move(h));
  }
  return out;
}

std::string describe(const std::vector<Holder>& holders) {
  std::string s;
  for (const auto& h : holders) { s += (s.empty() ? "" : ", ") + std::to_string(h.pid) + " (" + h.comm + ")"; }
  return s;
}

const char* to_string(ReloadKind k) {
  switch (k) {
    case ReloadKind::not_needed: return "not_needed";
    case ReloadKind::load: return "load";
    case ReloadKind::reload: return "reload";
    case ReloadKind::reboot_required: return "reboot_required";
    case ReloadKind::refused: return "refused";
    case ReloadKind::nothing_built: return "nothing_built";
  }
  return "?";
}

ReloadDecision decide_reload(const ReloadInputs& in) {
  ReloadDecision d;
  for (const auto& m : kUnloadOrder) {
    if (std::find(in.loaded.begin(), in.loaded.end(), m) != in.loaded.end()) { d.unload.push_back(m); }
  }
  const bool nvidia_loaded = std::find(in.loaded.begin(), in.loaded.end(), "nvidia") != in.loaded.end();
  if (in.disk_version && *in.disk_version != in.wanted_version) {
    d.kind = ReloadKind::refused;
    d.reason = "the module on disk is " + *in.disk_version + ", not " + in.wanted_version +
               ": install the wanted module first (driver.module)";
    return d;
  }
  const bool loaded_ok = nvidia_loaded && in.loaded_version && *in.loaded_version == in.wanted_version;
  if (!in.disk_version && !loaded_ok) {
    // No module of ours for the running kernel: a load has nothing to load, and a reboot helps
    // only into a kernel that has one.
    d.unload.clear();
    const bool next_has = !in.next_boot_kernel.empty() && in.next_boot_kernel != in.running_kernel &&
                          std::find(in.kernels_with_module.begin(), in.kernels_with_module.end(),
                                    in.next_boot_kernel) != in.kernels_with_module.end();
    if (next_has) {
      d.kind = ReloadKind::reboot_required;
      d.reason = in.wanted_version + " is installed for " + in.next_boot_kernel +
                 " (the kernel the boot loader starts next) but not for the running " + in.running_kernel +
                 ": reboot into " + in.next_boot_kernel + " to load it";
      return d;
    }
    d.kind = ReloadKind::nothing_built;
    d.reason = "no " + in.wanted_version + " module is installed for the running kernel " +
               (in.running_kernel.empty() ? std::string("(unknown)") : in.running_kernel) +
               (in.next_boot_kernel.empty() || in.next_boot_kernel == in.running_kernel
                    ? std::string()
                    : " nor for the next boot kernel " + in.next_boot_kernel) +
               ": not asking for a reboot, which would come up without it; driver.module must build it first "
               "(see its error and `p2pnode check` driver.kernels)";
    return d;
  }
  if (!nvidia_loaded) {
    d.unload.clear();
    if (!in.allow_reload) {
      d.kind = ReloadKind::reboot_required;
      d.reason = "no NVIDIA module is loaded and the profile does not allow loading it now: reboot to load " +
                 in.wanted_version;
    } else {
      d.kind = ReloadKind::load;
      d.reason = "no NVIDIA module is loaded: load " + in.wanted_version;
    }
    return d;
  }
  const bool version_ok = in.loaded_version && *in.loaded_version == in.wanted_version;
  const bool src_ok = !in.loaded_srcversion || !in.disk_srcversion || *in.loaded_srcversion == *in.disk_srcversion;
  if (version_ok && src_ok && !in.force) {
    d.unload.clear();
    d.kind = ReloadKind::not_needed;
    d.reason = "the loaded module is " + in.wanted_version + " and matches the one on disk";
    return d;
  }
  const std::string why =
      in.force && version_ok && src_ok ? "the remediation ladder reloads " + in.wanted_version + " (P2P was lost)"
      : !version_ok
          ? "the loaded module is " + in.loaded_version.value_or("unknown") + ", the profile wants " + in.wanted_version
          : "the loaded module's srcversion " + *in.loaded_srcversion + " differs from the installed one's " +
                *in.disk_srcversion;
  if (!in.allow_reload && !in.force) {
    d.kind = ReloadKind::reboot_required;
    d.reason = why + "; the profile does not allow a reload (driver.reload.allow): reboot required";
    return d;
  }
  if (!in.holders.empty()) {
    if (!in.allow_kill_holders) {
      d.kind = ReloadKind::refused;
      d.reason = why + "; processes hold /dev/nvidia*: " + describe(in.holders) +
                 " (stop them, or set driver.reload.kill_holders; or reboot)";
      return d;
    }
    for (const auto& h : in.holders) { d.kill.push_back(h.pid); }
  }
  d.kind = ReloadKind::reload;
  d.reason = why + ": unload and load";
  return d;
}

}  // namespace p2pnode::lifecycle
