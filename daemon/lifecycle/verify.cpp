#include "lifecycle/verify.hpp"

#include <algorithm>
#include <sstream>

#include "health/xid.hpp"
#include "nvidia/userspace.hpp"
#include "nvidia/version.hpp"

namespace p2pnode::lifecycle {
namespace {
std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) { s.pop_back(); }
  return s;
}

sys::CommandResult run(sys::CommandRunner& runner, std::vector<std::string> argv) {
  sys::Command c;
  c.argv = std::move(argv);
  c.timeout = std::chrono::seconds(30);
  return runner.run(c);
}
}  // namespace

std::optional<std::string> api_mismatch_since_load(std::string_view log) {
  std::istringstream in{std::string(log)};
  std::string line;
  std::optional<std::string> found;
  while (std::getline(in, line)) {
    // Anchored where the driver begins its message (health::kernel_text): text the kernel quotes
    // from a process (an audit record's comm="NVRM: API mismatch") is nobody's word here.
    const auto kt = health::kernel_text(line);
    if (!kt) { continue; }
    if (kt->text.rfind("NVRM: loading", 0) == 0) {
      found.reset();
    } else if (!found && kt->text.rfind("NVRM: API mismatch", 0) == 0) {
      found = line;
    }
  }
  return found;
}

std::vector<std::string> userspace_versions(const sys::SysRoot& root) {
  std::vector<std::string> out;
  if (auto u = nvidia::find_userspace_driver(root); u.version) {
    out.push_back(*u.version);  // what ld.so would load
  }
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"}) {
    for (const auto& f : root.list_dir(dir)) {
      if (f.rfind("libcuda.so.", 0) == 0 && nvidia::looks_like_version(f.substr(11)) &&
          std::count(f.begin() + 11, f.end(), '.') >= 1 &&
          std::find(out.begin(), out.end(), f.substr(11)) == out.end()) {
        out.push_back(f.substr(11));
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// nvidia-smi talks to the loaded module through the installed NVML: it reports the kernel
// driver's version, or NVML's "Driver/library version mismatch" when the two halves differ.
void check_nvidia_smi(sys::CommandRunner& runner, const std::string& wanted, DriverVerification& v) {
  const auto smi = run(runner, {"nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"});
  if (!smi.exited) {
    v.notes.push_back("nvidia-smi not run (" + smi.describe() + "): checked libcuda.so only");
    return;
  }
  const auto rep = nvidia::parse_smi_driver_versions(smi.out + smi.err);
  v.observed["nvidia_smi"] = rep.versions;
  if (rep.problem.find("version mismatch") != std::string::npos) {
    v.problems.push_back("nvidia-smi: " + rep.problem);
  } else if (!smi.success() || !rep.problem.empty()) {
    v.notes.push_back("nvidia-smi " + smi.describe() + ": " + rep.problem);  // no GPU visible, …
  }
  for (const auto& got : rep.versions) {
    if (got != wanted) {
      v.problems.push_back("nvidia-smi reports driver " + got + ", the profile wants " + wanted);
      break;
    }
  }
}

DriverVerification verify_driver(const sys::SysRoot& root, sys::CommandRunner& runner, const std::string& wanted,
                                 bool check_userspace) {
  DriverVerification v;
  const auto proc = root.read_text("/proc/driver/nvidia/version");
  const auto parsed = proc ? nvidia::parse_proc_version(*proc) : std::nullopt;
  const auto sys_version = root.read_attr("/sys/module/nvidia/version");
  v.observed["proc_version"] = parsed ? parsed->line : "";
  v.observed["sys_module_version"] = sys_version ? *sys_version : "";
  if (!parsed && !sys_version) {
    v.problems.push_back("the nvidia module is not loaded (no /proc/driver/nvidia/version, no /sys/module/nvidia)");
    return v;
  }
  if (parsed && parsed->version != wanted) {
    v.problems.push_back("/proc/driver/nvidia/version says " + parsed->version + ", the profile wants " + wanted);
  }
  if (sys_version && *sys_version != wanted) {
    v.problems.push_back("/sys/module/nvidia/version is " + *sys_version + ", the profile wants " + wanted);
  }

  if (check_userspace) {
    const auto us = userspace_versions(root);
    v.observed["userspace_versions"] = us;
    if (std::find(us.begin(), us.end(), wanted) == us.end()) {
      v.problems.push_back("no libcuda.so." + wanted + ": the userspace driver does not match the module");
    }
    check_nvidia_smi(runner, wanted, v);
  }

  const auto path = run(runner, {"modinfo", "-n", "nvidia"});
  if (path.success()) {
    const std::string p = trimmed(path.out);
    v.observed["modinfo_path"] = p;
    if (p.find("/updates/dkms/") == std::string::npos) {
      v.problems.push_back("modprobe would load " + p + ", not the DKMS copy under updates/dkms");
    }
  } else {
    v.notes.push_back("modinfo -n nvidia: " + path.describe());
  }
  const auto disk_src = run(runner, {"modinfo", "-F", "srcversion", "nvidia"});
  const auto loaded_src = root.read_attr("/sys/module/nvidia/srcversion");
  if (disk_src.success() && loaded_src) {
    v.observed["srcversion_disk"] = trimmed(disk_src.out);
    v.observed["srcversion_loaded"] = *loaded_src;
    if (trimmed(disk_src.out) != *loaded_src) {
      v.problems.push_back("the loaded module (srcversion " + *loaded_src + ") is not the one on disk (" +
                           trimmed(disk_src.out) + "): the old module is still loaded");
    }
  } else {
    v.notes.push_back("srcversion not compared (modinfo or /sys/module/nvidia/srcversion unavailable)");
  }

  auto log = run(runner, {"journalctl", "-k", "-b", "--no-pager", "-o", "cat"});
  if (!log.success()) { log = run(runner, {"dmesg"}); }
  if (log.success()) {
    if (auto line = api_mismatch_since_load(log.out)) { v.problems.push_back("kernel log since load: " + *line); }
  } else {
    v.notes.push_back("kernel log unavailable (journalctl -k and dmesg failed): API mismatch not checked");
  }
  return v;
}

}  // namespace p2pnode::lifecycle
