#include "core/module_package.hpp"

#include <gtest/gtest.h>

#include "lifecycle/module_target.hpp"

namespace p2pnode {
namespace {

TEST(ModulePackage, NamesDkmsAndTheSourceFolderAlike) {
  DriverSpec d;
  d.version = "610.57.04";
  ModuleSource km;
  km.name = "nvidia-p2p";
  d.kernel_module = km;
  const ModulePackage p = module_package(d);
  EXPECT_EQ(p.dkms_id(), "nvidia-p2p/610.57.04");
  EXPECT_EQ(p.dir_name(), "nvidia-p2p-610.57.04");
  EXPECT_EQ(p.src_dir(), "/usr/src/nvidia-p2p-610.57.04");
  // The install's target spells them the same way, and its stamp sits under the state folder.
  const lifecycle::ModuleTarget t = lifecycle::module_target(d);
  EXPECT_EQ(t.dkms_id(), p.dkms_id());
  EXPECT_EQ(t.src_dir, p.src_dir());
  EXPECT_EQ(t.stamp, "/var/lib/p2pnode/dkms/nvidia-p2p-610.57.04.json");
}

TEST(ModulePackage, AProfileWithoutAModuleOfItsOwnNamesTheDefault) {
  DriverSpec d;
  d.version = "595.45.04";
  EXPECT_EQ(module_package(d).dkms_id(), "nvidia-p2p/595.45.04");
}

}  // namespace
}  // namespace p2pnode
