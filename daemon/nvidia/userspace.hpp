#pragma once
// Which userspace driver (libcuda.so.<version>) a program on this box would load, found the way
// the dynamic loader finds it, and which source answered:
//   "ld.so.cache"  /etc/ld.so.cache (decoded through the SysRoot) names libcuda.so.1; the
//                  link's target gives the version. This is what ld.so itself reads first.
//   "libdir"       no cache entry: libcuda.so.<version> in a default directory
//                  (/usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/lib, /lib/x86_64-linux-gnu, /lib64, /lib).
//   "ldconfig -p"  the file was not there or not decodable: ldconfig's own print of its cache.
//   "nvidia-smi"   the version NVML reports (NVML loads only when userspace and module match).
// The last two run programs, so they are asked only for the real root (commands below).
#include <optional>
#include <string>

#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::nvidia {

struct UserspaceDriver {
  std::optional<std::string> version;  // 550.90.07
  std::string source;                  // one of the four above; empty when nothing answered
  std::string path;                    // the library file (in-root), when a file answered
  std::string note;                    // why a source could not answer (unreadable cache, …)
};

// From files only, through the SysRoot: ld.so.cache, then the default directories.
UserspaceDriver find_userspace_driver(const sys::SysRoot& root);
// When the files did not answer: `ldconfig -p`, then nvidia-smi, through the runner (read-only
// commands). `found` is returned unchanged when it already has a version.
UserspaceDriver find_userspace_driver_by_commands(const sys::SysRoot& root, sys::CommandRunner& runner,
                                                  UserspaceDriver found);

}  // namespace p2pnode::nvidia
