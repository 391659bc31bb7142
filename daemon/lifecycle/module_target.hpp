#pragma once
// What one profile's module is to DKMS and to p2pnode's own records: the package (name, version, the
// source folder) and the stamp and identity that say whether what is installed is what the profile asks.
#include <string>
#include <string_view>

#include "core/module_package.hpp"
#include "core/profile.hpp"

namespace p2pnode::lifecycle {

inline constexpr std::string_view kStateDir = "/var/lib/p2pnode/dkms";
// The stamp file's format, part of every identity: a new format rebuilds once.
inline constexpr std::string_view kStampFormat = "p2pnode-dkms-v1";

struct ModuleTarget {
  std::string name, version;  // the DKMS package: nvidia-p2p/550.90.07
  std::string src_dir;        // /usr/src/nvidia-p2p-550.90.07
  std::string stamp;          // /var/lib/p2pnode/dkms/nvidia-p2p-550.90.07.json
  std::string identity;       // sha256 over the source's and the patches' sha256 (and this format)

  ModulePackage package() const { return {name, version}; }
  std::string dkms_id() const { return package().dkms_id(); }    // nvidia-p2p/550.90.07
  std::string dir_name() const { return package().dir_name(); }  // nvidia-p2p-550.90.07
};
ModuleTarget module_target(const DriverSpec& d);

// Where a failed build's make.log is kept for a kernel (…/failed/<name>/<version>/<kernel>/make.log).
std::string failed_log_path(const ModuleTarget& t, const std::string& kernel);

}  // namespace p2pnode::lifecycle
