#include "dkms/initramfs.hpp"

#include <gtest/gtest.h>

namespace p2pnode::dkms {
namespace {

const std::vector<std::string> kNvidia = {"nvidia", "nvidia-modeset", "nvidia-drm", "nvidia-uvm", "nvidia-peermem"};

TEST(InitramfsPullsIn, NothingByDefault) {
  EXPECT_EQ(initramfs_pulls_in(kNvidia, {}), "");
  // Debian's stock modules file, and hooks that name other drivers or only similar words.
  InitramfsConfig c;
  c.modules_file = "# List of modules that you want to include in your initramfs.\n#nvidia-drm\n";
  c.hook_texts = {"#!/bin/sh\nmanual_add_modules zfs\n", "# nvidia_drm_modeset_helper is not a module here\n",
                  "copy_exec /usr/bin/nvidiafoo\n"};
  EXPECT_EQ(initramfs_pulls_in(kNvidia, c), "");
}

TEST(InitramfsPullsIn, TheModulesFileEitherSpelling) {
  InitramfsConfig c;
  c.modules_file = "nvme\n  nvidia_drm modeset=1\n";
  EXPECT_EQ(initramfs_pulls_in(kNvidia, c), "nvidia-drm");
  c.modules_file = "nvidia-modeset\n";
  EXPECT_EQ(initramfs_pulls_in(kNvidia, c), "nvidia-modeset");
}

TEST(InitramfsPullsIn, AHookThatAddsOne) {
  InitramfsConfig c;
  c.hook_texts = {"#!/bin/sh\n. /usr/share/initramfs-tools/hook-functions\nmanual_add_modules nvidia nvidia_drm\n"};
  EXPECT_EQ(initramfs_pulls_in(kNvidia, c), "nvidia");
}

}  // namespace
}  // namespace p2pnode::dkms
