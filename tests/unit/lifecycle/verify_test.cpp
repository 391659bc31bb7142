// verify_driver after a load: a temp-dir root with /proc and /sys as the module leaves them, and a
// ScriptedRunner answering modinfo, nvidia-smi and dmesg as they answer on a real box.
#include "lifecycle/verify.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "nvidia/version.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::lifecycle {
namespace {
namespace fs = std::filesystem;

constexpr const char* kWant = "550.90.07";

struct LoadedBox {
  p2pnode::test::TempDir tmp{"verify"};
  fs::path dir = tmp.path();
  sys::ScriptedRunner runner;
  explicit LoadedBox(const std::string& loaded = kWant) {
    write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  " + loaded +
                                            "  Release Build  (tiny@tiny14)  Mon Jun 17 2024\nGCC version:  gcc 12\n");
    write("sys/module/nvidia/version", loaded + "\n");
    write("sys/module/nvidia/srcversion", "C7943CB1D55185A98F0A163\n");
    write("usr/lib/x86_64-linux-gnu/libcuda.so." + std::string(kWant), "");
    runner.on({"modinfo", "-n", "nvidia"}, sys::exited_with(0, "/lib/modules/6.1.0-56-amd64/updates/dkms/nvidia.ko\n"));
    runner.on({"modinfo", "-F", "srcversion"}, sys::exited_with(0, "C7943CB1D55185A98F0A163\n"));
    runner.on({"journalctl"},
              sys::exited_with(0, "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  " + loaded + "\n"));
  }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel, std::ios::binary) << text;
  }
  DriverVerification verify() {
    const sys::SysRoot root(dir);
    return verify_driver(root, runner, kWant, true);
  }
};

// Recorded on a lent H200 (tests/fixtures/_recorded/nvidia-smi-h200/README.md).
std::string recorded(const std::string& name) {
  std::ifstream in(std::string(P2PNODE_SOURCE_DIR) + "/tests/fixtures/_recorded/nvidia-smi-h200/" + name,
                   std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) { s += x + " | "; }
  return s;
}

}  // namespace

TEST(SmiDriverVersions, RecordedH200) {
  auto r = nvidia::parse_smi_driver_versions(recorded("query-driver_version.out"));
  EXPECT_EQ(r.versions, (std::vector<std::string>{"580.159.04"}));
  EXPECT_EQ(r.problem, "");
  r = nvidia::parse_smi_driver_versions(recorded("no-devices.out"));
  EXPECT_TRUE(r.versions.empty());
  EXPECT_EQ(r.problem, "No devices were found");
}

TEST(SmiDriverVersions, OneLinePerGpu) {
  const auto r = nvidia::parse_smi_driver_versions("550.90.07\n550.90.07\n");
  EXPECT_EQ(r.versions, (std::vector<std::string>{"550.90.07", "550.90.07"}));
  EXPECT_EQ(r.problem, "");
}

TEST(SmiDriverVersions, NvmlMismatchNoGpuAndGarbage) {
  auto r = nvidia::parse_smi_driver_versions(
      "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.107\n");
  EXPECT_TRUE(r.versions.empty());
  EXPECT_EQ(r.problem, "Failed to initialize NVML: Driver/library version mismatch");
  r = nvidia::parse_smi_driver_versions("No devices were found\n");
  EXPECT_EQ(r.problem, "No devices were found");
  r = nvidia::parse_smi_driver_versions("");
  EXPECT_EQ(r.problem, "no output");
  r = nvidia::parse_smi_driver_versions("550.90.07\r\n\x01\xff\n");
  EXPECT_EQ(r.versions.size(), 1u);
  EXPECT_FALSE(r.problem.empty());
}

TEST(VerifyDriver, AllAgreeIncludingNvidiaSmi) {
  LoadedBox box;
  box.runner.on({"nvidia-smi"}, sys::exited_with(0, "550.90.07\n550.90.07\n"));
  const auto v = box.verify();
  EXPECT_TRUE(v.ok()) << joined(v.problems);
  EXPECT_EQ(v.observed["nvidia_smi"].size(), 2u);
}

TEST(VerifyDriver, NvmlVersionMismatchIsAProblem) {
  LoadedBox box;
  box.runner.on({"nvidia-smi"}, sys::exited_with(18, "",
                                                 "Failed to initialize NVML: Driver/library version mismatch\n"
                                                 "NVML library version: 550.107\n"));
  const auto v = box.verify();
  ASSERT_FALSE(v.ok());
  EXPECT_NE(joined(v.problems).find("nvidia-smi: Failed to initialize NVML: Driver/library version mismatch"),
            std::string::npos)
      << joined(v.problems);
}

TEST(VerifyDriver, NvidiaSmiReportingAnotherVersionIsAProblem) {
  LoadedBox box;
  box.runner.on({"nvidia-smi"}, sys::exited_with(0, "535.183.01\n"));
  const auto v = box.verify();
  EXPECT_NE(joined(v.problems).find("nvidia-smi reports driver 535.183.01, the profile wants 550.90.07"),
            std::string::npos)
      << joined(v.problems);
}

TEST(VerifyDriver, MissingNvidiaSmiOrNoGpuIsANoteNotAProblem) {
  LoadedBox box;  // no rule: nvidia-smi cannot be started
  auto v = box.verify();
  EXPECT_TRUE(v.ok()) << joined(v.problems);
  EXPECT_NE(joined(v.notes).find("nvidia-smi not run"), std::string::npos) << joined(v.notes);
  box.runner.on({"nvidia-smi"}, sys::exited_with(6, "No devices were found\n"));
  v = box.verify();
  EXPECT_TRUE(v.ok()) << joined(v.problems);
  EXPECT_NE(joined(v.notes).find("No devices were found"), std::string::npos) << joined(v.notes);
}

TEST(VerifyDriver, OldModuleStillLoadedAndStockCopyFirst) {
  LoadedBox box("535.183.01");
  box.runner.on({"nvidia-smi"}, sys::exited_with(0, "535.183.01\n"));
  box.runner.on({"modinfo", "-n", "nvidia"},
                sys::exited_with(0, "/lib/modules/6.1.0-56-amd64/kernel/drivers/video/nvidia.ko\n"));
  box.runner.on({"modinfo", "-F", "srcversion"}, sys::exited_with(0, "0123456789ABCDEF0123456\n"));
  const auto v = box.verify();
  const auto p = joined(v.problems);
  EXPECT_NE(p.find("/proc/driver/nvidia/version says 535.183.01"), std::string::npos) << p;
  EXPECT_NE(p.find("not the DKMS copy under updates/dkms"), std::string::npos) << p;
  EXPECT_NE(p.find("the old module is still loaded"), std::string::npos) << p;
}

TEST(VerifyDriver, ApiMismatchInTheKernelLogSinceLoad) {
  LoadedBox box;
  box.runner.on({"nvidia-smi"}, sys::exited_with(0, "550.90.07\n"));
  box.runner.on({"journalctl"}, sys::exited_with(0,
                                                 "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.90.07\n"
                                                 "NVRM: API mismatch: the client has the version 550.107, but\n"));
  const auto v = box.verify();
  EXPECT_NE(joined(v.problems).find("API mismatch"), std::string::npos) << joined(v.problems);
}

}  // namespace p2pnode::lifecycle
