// The one decoder of an NVIDIA driver release: what the loader accepts, the branch, the order.
#include "core/driver_version.hpp"

#include <gtest/gtest.h>

using namespace p2pnode;

TEST(DriverVersion, TwoToFourNumbers) {
  for (const char* ok : {"550.90.07", "570.190", "610.57.04", "1.5", "550.54.15.1"}) {
    EXPECT_TRUE(is_driver_version(ok)) << ok;
  }
  for (const char* bad :
       {"", "550", "550.", ".550", "550..90", "v550", "550.90.07-p2p", "550.90.07.1.2", "1234567.1", "550 .90"}) {
    EXPECT_FALSE(is_driver_version(bad)) << bad;
  }
  EXPECT_EQ(DriverVersion::parse("550.90.07")->numbers, (std::vector<int>{550, 90, 7}));
}

TEST(DriverVersion, BranchAndOrder) {
  EXPECT_EQ(driver_branch_of("550.90.07"), 550);
  EXPECT_EQ(driver_branch_of("570.86.16"), 570);
  EXPECT_EQ(driver_branch_of("1.5"), 1);
  EXPECT_EQ(driver_branch_of(""), 0);
  EXPECT_EQ(driver_branch_of("v550"), 0);
  EXPECT_EQ(compare_driver_versions("570.86.16", "575.64.05"), -1);
  EXPECT_EQ(compare_driver_versions("610.43.03", "610.43.03"), 0);
  EXPECT_EQ(compare_driver_versions("570.190", "570.86.16"), 1);  // numbers, not text
  EXPECT_EQ(compare_driver_versions("550.100", "550.90.07"), 1);
  EXPECT_EQ(compare_driver_versions("580.142", "580.142.0"), 0);
  EXPECT_EQ(compare_driver_versions("junk", "550.90.07"), -1);  // not a version sorts first
}
