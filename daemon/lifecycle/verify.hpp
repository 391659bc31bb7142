#pragma once
// After a load: is the loaded NVIDIA module the one p2pnode installed, at the profile's version,
// matching the userspace? Reads /proc and /sys; runs modinfo and journalctl/dmesg.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

struct DriverVerification {
  std::vector<std::string> problems;  // empty: verified
  std::vector<std::string> notes;     // what could not be checked, and why
  nlohmann::json observed = nlohmann::json::object();
  bool ok() const { return problems.empty(); }
};

// The kernel log since the last "NVRM: loading" line: does it hold "NVRM: API mismatch"? Pure.
std::optional<std::string> api_mismatch_since_load(std::string_view kernel_log);

// Which userspace driver versions are installed (libcuda.so.<version> files), sorted.
std::vector<std::string> userspace_versions(const sys::SysRoot& root);

DriverVerification verify_driver(const sys::SysRoot& root, sys::CommandRunner& runner, const std::string& wanted,
                                 bool check_userspace);

}  // namespace p2pnode::lifecycle
