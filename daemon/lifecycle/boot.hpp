#pragma once
// Which kernels are installed and which one the boot loader starts next.
// grub_default_kernel() is pure (grub.cfg and grubenv text in); the rest reads through SysRoot.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

// Kernel releases compared like `sort -V` on their numeric runs ("6.1.0-56" > "6.1.0-9"). <0, 0, >0.
int compare_releases(std::string_view a, std::string_view b);

struct BootChoice {
  std::string kernel;  // 6.1.0-56-amd64; empty when nothing could be decided
  std::string how;     // "grub.cfg: set default=\"0\" -> 'Debian GNU/Linux' (/boot/vmlinuz-6.1.0-56-amd64)"
};

// The kernel GRUB boots by default: `set default=` (an index, "1>2" into a submenu, a menuentry id
// or title, or ${saved_entry} resolved from grubenv), then that entry's `linux` line. nullopt when
// the default cannot be resolved to an entry with a /vmlinuz-<release>.
std::optional<BootChoice> grub_default_kernel(std::string_view grub_cfg, std::string_view grubenv);

// The entry path that boots `kernel` normally (not its recovery entry), as grub-set-default and
// saved_entry take it: "submenu-id>entry-id" (ids where grub.cfg gives them, else titles). nullopt
// when grub.cfg has no such entry.
std::optional<std::string> grub_entry_for(std::string_view grub_cfg, std::string_view kernel);

// /boot/grub/grub.cfg's default when it resolves to a kernel that is installed, else the newest
// /boot/vmlinuz-* (what Debian's grub.cfg lists first), else the newest /lib/modules/<k>.
BootChoice next_boot_kernel(const sys::SysRoot& root);

// Installed kernels: /lib/modules/<k> with kernel/, modules.dep or build/ (headers), newest first.
std::vector<std::string> installed_kernels(const sys::SysRoot& root);

}  // namespace p2pnode::lifecycle
