// Naming why the GPU could not register a drive's BAR0 page, from the facts the agent reads.
#include "p2pnode/agent/nvme/gpu_diag.hpp"

#include <gtest/gtest.h>

using namespace p2pnode::agent::nvme;

TEST(AgentNvmeGpuDiag, KernelVersions) {
  EXPECT_EQ(kernel_major_minor("6.17.0-14-generic"), std::make_pair(6, 17));
  EXPECT_EQ(kernel_major_minor("6.1.0-56-amd64"), std::make_pair(6, 1));
  EXPECT_FALSE(kernel_major_minor("garbage").has_value());
  EXPECT_TRUE(kernel_lacks_follow_pfn("6.17.0-14-generic"));  // seed 002's Ubuntu 25.10
  EXPECT_TRUE(kernel_lacks_follow_pfn("6.10.0"));
  EXPECT_FALSE(kernel_lacks_follow_pfn("6.9.12"));
  EXPECT_FALSE(kernel_lacks_follow_pfn("6.1.0-56-amd64"));  // Debian 12
  EXPECT_TRUE(kernel_lacks_follow_pfn("7.0.1"));
  EXPECT_FALSE(kernel_lacks_follow_pfn(""));
}

TEST(AgentNvmeGpuDiag, SeedsBoxIsTheModule) {
  // Seed 002 before the patch: RTX 3090, 590.48.01 DKMS, kernel 6.17, amd_iommu=off.
  const auto d = diagnose_register_failure({"cudaErrorInvalidValue", "6.17.0-14-generic", "590.48.01", false, false});
  EXPECT_EQ(d.cause, "module_io_memory_pfn");
  EXPECT_NE(d.reason.find("follow_pfn"), std::string::npos);
  EXPECT_NE(d.reason.find("590.48.01"), std::string::npos);
  EXPECT_NE(d.reason.find("io-memory-pfn"), std::string::npos);
  EXPECT_NE(d.reason.find("cudaErrorInvalidValue"), std::string::npos);
}

TEST(AgentNvmeGpuDiag, IommuAndLibcudaComeFirst) {
  EXPECT_EQ(diagnose_register_failure({"cudaErrorInvalidValue", "6.17.0", "590.48.01", true, false}).cause,
            "platform_iommu");
  EXPECT_EQ(diagnose_register_failure({"", "6.17.0", "", false, true}).cause, "libcuda");
  const auto old = diagnose_register_failure({"cudaErrorNotSupported", "6.1.0-56-amd64", "550.90.07", false, false});
  EXPECT_EQ(old.cause, "unknown");
  EXPECT_NE(old.reason.find("still has follow_pfn"), std::string::npos);
}
