#pragma once
// Decoders of NVIDIA driver facts: /proc/driver/nvidia/version and modprobe.d options.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode::nvidia {

struct ProcVersion {
  std::string line;     // the NVRM line
  std::string version;  // 550.90.07
  bool open = false;    // "Open Kernel Module"
  std::string builder;  // tiny@tiny14; "nixbld" for "(nixbld@)"; empty for "()"
  std::string gcc;      // the GCC version line
};

// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build  (tiny@tiny14)  …"
std::optional<ProcVersion> parse_proc_version(std::string_view text);
bool looks_like_version(std::string_view v);  // 550.90.07, 580.159.04

// `nvidia-smi --query-gpu=driver_version --format=csv,noheader`: one version per GPU. What it
// reports, or why it could not (NVML's "Driver/library version mismatch", no GPU, garbage).
struct SmiReport {
  std::vector<std::string> versions;  // one per GPU line, as printed
  std::string problem;                // empty when every line is a version
};
SmiReport parse_smi_driver_versions(std::string_view out);
// "options nvidia NVreg_X=1 NVreg_Y=2" lines for one module (comments and other modules ignored).
std::map<std::string, std::string> parse_modprobe_options(std::string_view text, std::string_view module);

}  // namespace p2pnode::nvidia
