// secureboot.module_signing: will the kernel load the modules DKMS builds for this profile? Before
// anything is downloaded or built (secureboot/verdict.hpp decides).
#include "checks/check.hpp"
#include "secureboot/verdict.hpp"

namespace p2pnode::checks {

std::vector<Finding> check_secure_boot(const Profile& p, const Inventory& inv) {
  if (!p.driver || !p.driver->kernel_module) {
    return {};  // nothing is built: nothing to sign
  }
  const auto& s = inv.secure_boot;
  const auto v = secureboot::decide_signing(s);
  Severity sev = Severity::ok;
  if (v.trust == secureboot::Trust::untrusted || v.trust == secureboot::Trust::no_key) {
    sev = Severity::error;
  } else if (v.trust == secureboot::Trust::queued || v.trust == secureboot::Trust::unknown) {
    sev = Severity::warning;
  }
  std::string summary = v.summary;
  if (!s.key_problem.empty()) {
    sev = Severity::error;
    summary += "; " + s.key_problem + ": whoever can read it can sign modules this kernel trusts";
  }
  Finding f = make_finding("secureboot.module_signing", "node", sev, summary);
  auto opt = [](const std::optional<bool>& b) { return b ? nlohmann::json(*b) : nlohmann::json(nullptr); };
  f.observed = {{"efi", s.efi},
                {"secure_boot", opt(s.enabled)},
                {"setup_mode", opt(s.setup_mode)},
                {"lockdown", s.lockdown},
                {"sig_enforce", opt(s.sig_enforce)},
                {"key", s.key_path},
                {"certificate", s.cert_path},
                {"key_present", s.key_present},
                {"certificate_present", s.cert_present},
                {"enrolled", opt(s.cert_enrolled)},
                {"queued", opt(s.cert_queued)},
                {"trust", secureboot::to_string(v.trust)}};
  if (!s.key_problem.empty()) { f.observed["key_problem"] = s.key_problem; }
  f.expected = {{"trust", "trusted or not_enforced"}};
  f.remediation = s.key_problem.empty() ? v.remediation
                                        : "chown root:root " + s.key_path + " && chmod 0600 " + s.key_path +
                                              (v.remediation.empty() ? std::string() : "; then: " + v.remediation);
  return {f};
}

}  // namespace p2pnode::checks
