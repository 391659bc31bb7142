#include <gtest/gtest.h>

#include "dkms/status.hpp"

namespace p2pnode::dkms {
namespace {

TEST(DkmsStatus, NewFormat) {
  const auto e = parse_status_line("nvidia/550.90.07, 6.1.0-56-amd64, x86_64: installed");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->module, "nvidia");
  EXPECT_EQ(e->version, "550.90.07");
  EXPECT_EQ(e->kernel, "6.1.0-56-amd64");
  EXPECT_EQ(e->arch, "x86_64");
  EXPECT_EQ(e->state, "installed");
  EXPECT_EQ(e->note, "");
}

TEST(DkmsStatus, OldFormatWithNote) {
  const auto e =
      parse_status_line("nvidia, 396.45, 4.17.14-202.fc28.x86_64, x86_64: installed (original_module exists)");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->module, "nvidia");
  EXPECT_EQ(e->version, "396.45");
  EXPECT_EQ(e->kernel, "4.17.14-202.fc28.x86_64");
  EXPECT_EQ(e->state, "installed");
  EXPECT_EQ(e->note, "(original_module exists)");
}

TEST(DkmsStatus, AddedBuiltWeakAndNoise) {
  const auto all = parse_status(
      "nvidia-p2p/550.90.07: added\n"
      "nvidia, 550.54.15: added\n"
      "nvidia/590.48.01, 6.18.9+deb14-amd64, x86_64: built\n"
      "Warning: The module p2phello/1.0 has no source\n"
      "gdrdrv/2.4, 6.1.0-56-amd64, x86_64: installed (Differences between built and installed modules)\n"
      "zfs/2.1.11, 6.1.0-55-amd64, x86_64: installed-weak from 6.1.0-54-amd64\n"
      "\n");
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].module, "nvidia-p2p");
  EXPECT_EQ(all[0].state, "added");
  EXPECT_EQ(all[0].kernel, "");
  EXPECT_EQ(all[1].version, "550.54.15");
  EXPECT_EQ(all[1].state, "added");
  EXPECT_EQ(all[2].state, "built");
  EXPECT_EQ(all[2].kernel, "6.18.9+deb14-amd64");
  EXPECT_EQ(all[3].note, "(Differences between built and installed modules)");
  EXPECT_EQ(all[4].state, "installed-weak");
  EXPECT_EQ(all[4].note, "from 6.1.0-54-amd64");
}

TEST(DkmsStatus, ExitCodes) {
  EXPECT_NE(exit_code_meaning(10).find("build failed"), std::string::npos);
  EXPECT_NE(exit_code_meaning(21).find("headers"), std::string::npos);
  EXPECT_NE(exit_code_meaning(6).find("patch"), std::string::npos);
  EXPECT_NE(exit_code_meaning(77).find("BUILD_EXCLUSIVE"), std::string::npos);
  EXPECT_EQ(exit_code_meaning(99), "DKMS error");
}

TEST(DkmsStatus, FirstCompilerError) {
  // The shape of the 550.90.07-p2p failure on Debian's 6.1.192 headers (FACTS.md).
  const std::string log =
      "DKMS make.log for nvidia-p2p-550.90.07 for kernel 6.1.0-56-amd64 (x86_64)\n"
      "  CC [M]  /var/lib/dkms/nvidia-p2p/550.90.07/build/kernel-open/nvidia/nv-pci.o\n"
      "/var/lib/dkms/nvidia-p2p/550.90.07/build/kernel-open/nvidia/nv-pci.c: In function 'nv_resize_pcie_bars':\n"
      "/var/lib/dkms/nvidia-p2p/550.90.07/build/kernel-open/nvidia/nv-pci.c:432:9: error: too few arguments to "
      "function 'pci_resize_resource'\n"
      "  432 |     r = pci_resize_resource(pci_dev, NV_GPU_BAR1, requested_size);\n"
      "/var/lib/dkms/nvidia-p2p/550.90.07/build/kernel-open/nvidia/nv-pci.c:500:1: error: second one\n"
      "make[2]: *** [scripts/Makefile.build:250: nv-pci.o] Error 1\n";
  const auto e = first_compiler_error(log);
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("In function 'nv_resize_pcie_bars'"), std::string::npos);
  EXPECT_NE(e->find("432:9: error: too few arguments"), std::string::npos);
  EXPECT_EQ(e->find("second one"), std::string::npos);
  EXPECT_EQ(first_compiler_error("make: *** [Makefile:5: all] Error 2\n"), "make: *** [Makefile:5: all] Error 2");
  EXPECT_EQ(first_compiler_error("all fine\n"), std::nullopt);
  EXPECT_EQ(first_compiler_error("stdarg.h: fatal error: stdarg.h: No such file or directory\n"),
            "stdarg.h: fatal error: stdarg.h: No such file or directory");
}

TEST(DkmsStatus, TailAndFailureLine) {
  EXPECT_EQ(tail_lines("a\nb\nc\n\n", 2), "b\nc\n");
  EXPECT_EQ(tail_lines("a\n", 5), "a\n");
  EXPECT_EQ(dkms_failure_line("applying patch 02-x.patch...(bad exit status: 1)\n"
                              "Error! Application of patch 02-x.patch failed.\n"),
            "Error! Application of patch 02-x.patch failed.");
}

}  // namespace
}  // namespace p2pnode::dkms
