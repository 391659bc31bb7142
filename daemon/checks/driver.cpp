#include <algorithm>
#include <sstream>

#include "checks/check.hpp"
#include "core/driver_version.hpp"

namespace p2pnode::checks {

namespace {
// NVreg_RegistryDwords="RMForceP2PType=2;ForceP2P=17" -> map
std::map<std::string, std::string> registry_dwords(const std::map<std::string, std::string>& opts) {
  std::map<std::string, std::string> out;
  auto it = opts.find("NVreg_RegistryDwords");
  if (it == opts.end()) { return out; }
  std::string v = it->second;
  v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
  std::istringstream ss(v);
  std::string kv;
  while (std::getline(ss, kv, ';')) {
    const auto eq = kv.find('=');
    if (eq != std::string::npos) { out[kv.substr(0, eq)] = kv.substr(eq + 1); }
  }
  return out;
}
}  // namespace

// What a profile-less or driver-less check can still say: RMForceP2PType numbering per branch.
std::optional<std::string> p2p_type_problem(const std::map<std::string, std::string>& options,
                                            const std::string& version) {
  const auto reg = registry_dwords(options);
  auto it = reg.find("RMForceP2PType");
  if (it == reg.end()) { return std::nullopt; }
  const int major = driver_branch_of(version);
  if (major == 0) { return std::nullopt; }
  const std::string want = major < 570 ? "2" : "1";
  if (it->second != want) {
    return "RMForceP2PType=" + it->second + " in /etc/modprobe.d selects " +
           (major < 570 ? std::string(it->second == "1" ? "MAILBOXP2P" : "another type")
                        : std::string("not PCIe P2P")) +
           " on the " + std::to_string(major) + " branch (BAR1 P2P is " + want +
           " there): it silently disables BAR1 P2P";
  }
  if (major >= 570) {
    auto pcie = reg.find("RMPcieP2PType");
    if (pcie != reg.end() && pcie->second != "1") {
      return "RMPcieP2PType=" + pcie->second + " selects mailbox or auto P2P; BAR1 P2P is 1";
    }
  }
  return std::nullopt;
}

std::vector<Finding> check_driver_state(const Profile& p, const Inventory& inv) {
  const NvidiaDriverState& s = inv.nvidia;
  std::vector<Finding> out;
  Finding f = make_finding("driver.state", "node", Severity::ok, "");
  f.observed = {{"loaded_version", s.loaded_version.value_or("")},
                {"open_module", s.open_module ? nlohmann::json(*s.open_module) : nlohmann::json(nullptr)},
                {"builder", s.builder.value_or("")},
                {"userspace_version", s.userspace_version.value_or("")},
                {"userspace_source", s.userspace_source},
                {"modules", s.modules_loaded},
                {"gsp_firmware", s.gsp_firmware_versions},
                {"options", s.modprobe_options}};
  std::vector<std::string> errors, warnings;
  std::string fix;
  const std::string want = p.driver ? p.driver->version : std::string();
  if (!want.empty()) { f.expected = {{"version", want}, {"open_module", p.driver->kernel_module.has_value()}}; }
  if (!s.loaded_version) {
    if (!want.empty()) {
      errors.push_back("no NVIDIA kernel module is loaded; the profile wants " + want);
      fix = "Run `p2pnode apply` to build and load the driver (or reboot after it installed).";
    }
  } else {
    if (!want.empty() && *s.loaded_version != want) {
      errors.push_back("loaded module is " + *s.loaded_version + ", the profile wants " + want);
      fix =
          "Run `p2pnode apply` to install " + want + " (it reloads the module when allowed, else a reboot is needed).";
    }
    if (s.userspace_version && *s.userspace_version != *s.loaded_version) {
      errors.push_back("userspace libcuda " + *s.userspace_version + " does not match the module " + *s.loaded_version +
                       " (NVRM: API mismatch)");
      fix += (fix.empty() ? "" : " ") + std::string(
                                            "Install the userspace driver of the module's version with the "
                                            ".run installer's --silent --no-kernel-modules (p2pnode apply does this).");
    }
    if (p.driver && p.driver->kernel_module && s.open_module && !*s.open_module) {
      errors.push_back("the proprietary module is loaded; the P2P patch is for the open kernel module");
      fix +=
          (fix.empty() ? "" : " ") + std::string("Install the patched open-gpu-kernel-modules build (p2pnode apply).");
    }
    if (s.open_module.value_or(false) && !s.gsp_firmware_versions.empty() &&
        std::find(s.gsp_firmware_versions.begin(), s.gsp_firmware_versions.end(), *s.loaded_version) ==
            s.gsp_firmware_versions.end()) {
      warnings.push_back("no GSP firmware directory /lib/firmware/nvidia/" + *s.loaded_version);
    }
  }
  const std::string version = !want.empty() ? want : s.loaded_version.value_or("");
  if (auto problem = p2p_type_problem(s.modprobe_options, version)) {
    errors.push_back(*problem);
    fix += (fix.empty() ? "" : " ") + std::string(
                                          "Remove RMForceP2PType from NVreg_RegistryDwords in /etc/modprobe.d "
                                          "(or set it to the BAR1 P2P value of this branch), then reload the module.");
  }
  if (!errors.empty()) {
    f.severity = Severity::error;
  } else if (!warnings.empty()) {
    f.severity = Severity::warning;
  }
  std::vector<std::string> all = errors;
  all.insert(all.end(), warnings.begin(), warnings.end());
  if (all.empty()) {
    f.summary = s.loaded_version
                    ? "NVIDIA " + std::string(s.open_module.value_or(false) ? "open" : "proprietary") + " module " +
                          *s.loaded_version + " loaded" + (s.builder ? " (built by " + *s.builder + ")" : "")
                    : "no NVIDIA module loaded (the profile names no driver)";
  } else {
    f.summary = all.front();
    for (std::size_t i = 1; i < all.size(); ++i) { f.summary += "; " + all[i]; }
  }
  f.remediation = fix;
  out.push_back(f);
  return out;
}

}  // namespace p2pnode::checks
