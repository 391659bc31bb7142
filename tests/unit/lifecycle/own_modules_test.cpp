// The kernel's own modules (lifecycle/own_modules.hpp): names from modules.builtin and the kernel/
// tree, '-' and '_' one, NVIDIA's names and gdrdrv allowed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lifecycle/own_modules.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::lifecycle {
namespace {
namespace fs = std::filesystem;

struct ModulesBox {
  p2pnode::test::TempDir tmp{"own-modules"};
  fs::path dir = tmp.path();
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel, std::ios::binary) << text;
  }
};

TEST(OwnModules, NamesAsModprobeKnowsThem) {
  EXPECT_EQ(kernel_module_name("nvme-core.ko.xz"), "nvme_core");
  EXPECT_EQ(kernel_module_name("kernel/drivers/nvme/host/nvme.ko"), "nvme");
  EXPECT_EQ(kernel_module_name("nvidia-drm.ko.zst"), "nvidia_drm");
  EXPECT_EQ(kernel_module_name("p2ptest"), "p2ptest");
  for (auto ok : {"nvme", "nvidia-uvm", "snd_hda_intel", "A1"}) { EXPECT_TRUE(is_kernel_module_name(ok)) << ok; }
  for (auto bad : {"", "../x", "a/b", "$(TARGET)", "a.b", "a b"}) { EXPECT_FALSE(is_kernel_module_name(bad)) << bad; }
  EXPECT_FALSE(is_kernel_module_name(std::string(56, 'a')));
}

TEST(OwnModules, FromTheKernelTreeAndModulesBuiltin) {
  ModulesBox b;
  const std::string k = "lib/modules/6.1.0-56-amd64";
  b.write(k + "/kernel/drivers/nvme/host/nvme.ko", "");
  b.write(k + "/kernel/drivers/nvme/host/nvme-core.ko.xz", "");
  b.write(k + "/kernel/nvidia-550/nvidia-drm.ko", "");
  b.write(k + "/kernel/drivers/README", "");
  b.write(k + "/updates/dkms/p2ptest.ko", "");  // DKMS's, not the kernel's
  b.write(k + "/modules.builtin", "kernel/fs/ext4/ext4.ko\nkernel/fs/jbd2/jbd2.ko\n");
  const sys::SysRoot root(b.dir);
  const auto own = kernel_own_modules(root, "6.1.0-56-amd64");
  EXPECT_EQ(own.at("nvme"), "/" + k + "/kernel/drivers/nvme/host/nvme.ko");
  EXPECT_EQ(own.at("nvme_core"), "/" + k + "/kernel/drivers/nvme/host/nvme-core.ko.xz");
  EXPECT_EQ(own.at("ext4"), "/" + k + "/modules.builtin: kernel/fs/ext4/ext4.ko");
  EXPECT_EQ(own.count("p2ptest"), 0u);
  EXPECT_EQ(own.count("README"), 0u);

  const std::vector<std::string> kernels = {"6.1.0-56-amd64"};
  EXPECT_TRUE(refuse_kernel_own_modules(root, {"p2ptest"}, kernels));
  EXPECT_TRUE(refuse_kernel_own_modules(
      root, {"nvidia", "nvidia-uvm", "nvidia-modeset", "nvidia-drm", "nvidia-peermem"}, kernels));
  EXPECT_TRUE(refuse_kernel_own_modules(root, {"gdrdrv"}, kernels));
  const auto nvme = refuse_kernel_own_modules(root, {"p2ptest", "nvme-core"}, kernels);
  ASSERT_FALSE(nvme);
  EXPECT_NE(nvme.error().message.find("the module nvme-core, which is one of kernel 6.1.0-56-amd64's own (/" + k +
                                      "/kernel/drivers/nvme/host/nvme-core.ko.xz)"),
            std::string::npos)
      << nvme.error().message;
  const auto odd = refuse_kernel_own_modules(root, {"../../x"}, kernels);
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().message.find("a module named '../../x'"), std::string::npos) << odd.error().message;
}

}  // namespace
}  // namespace p2pnode::lifecycle
