#pragma once
// Whether an initramfs carries any of a package's modules, from initramfs-tools' configuration
// (pure: the caller reads the files). Debian's initramfs-tools copies a module from
// /lib/modules/<k>/updates/dkms only when /etc/initramfs-tools/modules lists it or a hook adds it
// (an nvidia-drm modeset hook, say); MODULES=most and dep take drivers from kernel/ only.
#include <string>
#include <vector>

namespace p2pnode::dkms {

struct InitramfsConfig {
  std::string modules_file;             // /etc/initramfs-tools/modules
  std::vector<std::string> hook_texts;  // /etc/initramfs-tools/hooks/*, /usr/share/initramfs-tools/hooks/*
};

// The first of `modules` (nvidia-drm or nvidia_drm spelled either way) the configuration pulls
// in, or "" when none: then `update-initramfs -u` after installing them changes nothing.
std::string initramfs_pulls_in(const std::vector<std::string>& modules, const InitramfsConfig& config);

}  // namespace p2pnode::dkms
