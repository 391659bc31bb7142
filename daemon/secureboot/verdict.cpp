#include "secureboot/verdict.hpp"

namespace p2pnode::secureboot {

const char* to_string(Trust t) {
  switch (t) {
    case Trust::not_enforced: return "not_enforced";
    case Trust::trusted: return "trusted";
    case Trust::queued: return "queued";
    case Trust::untrusted: return "untrusted";
    case Trust::no_key: return "no_key";
    case Trust::unknown: return "unknown";
  }
  return "unknown";
}

SigningVerdict decide_signing(const SecureBootState& s) {
  SigningVerdict v;
  const std::string enrol = "mokutil --import " + s.cert_path +
                            " (it asks for a one-time password), reboot, and at the "
                            "MokManager screen choose Enroll MOK, Continue, Yes, type that password and reboot: only a "
                            "person at the console can do this step. Or turn Secure Boot off in the firmware";
  // Who enforces: Secure Boot (Debian's and Ubuntu's kernels enforce module signatures when booted
  // with it), or the kernel itself (module.sig_enforce=1, CONFIG_MODULE_SIG_FORCE) whatever the
  // firmware says; sig_enforce is also what tells where efivarfs cannot be read.
  const bool sb_on = s.efi && s.enabled && *s.enabled && !(s.setup_mode && *s.setup_mode);
  const bool kernel_enforces = s.sig_enforce && *s.sig_enforce;
  if (!sb_on && !kernel_enforces) {
    if (!s.efi) {
      v.summary = "no UEFI firmware interface (/sys/firmware/efi): no Secure Boot, modules load unsigned";
    } else if (!s.enabled) {
      v.summary = "Secure Boot state unknown (" + s.problem +
                  "); the kernel does not enforce module signatures (sig_enforce), so modules load unsigned";
    } else if (!*s.enabled) {
      v.summary = "Secure Boot is off: modules load unsigned";
    } else {
      v.summary = "Secure Boot is in setup mode (no platform key enrolled): it does not enforce, modules load unsigned";
    }
    return v;
  }
  const std::string lockdown = s.lockdown.empty() ? std::string("unknown") : s.lockdown;
  const std::string on =
      sb_on ? "Secure Boot is on (lockdown " + lockdown + "): the kernel loads only modules signed by a key it trusts"
            : "the kernel enforces module signatures (sig_enforce=Y; Secure Boot " +
                  std::string(!s.efi       ? "absent: no UEFI"
                              : !s.enabled ? "state unknown: " + s.problem
                              : *s.enabled ? "in setup mode"
                                           : "off") +
                  "): it loads only modules signed by a key it trusts";
  if (!s.cert_present) {
    v.trust = Trust::no_key;
    v.summary = on + "; DKMS has no signing key (" + s.cert_path +
                "): the key it would make at its first build is "
                "not trusted, so `modprobe nvidia` would fail with \"Key was rejected by service\"";
    v.remediation =
        "Before any build: make DKMS's key (`dkms generate_mok`, DKMS 3.x; it needs openssl), then " + enrol;
    return v;
  }
  if (s.cert_enrolled && *s.cert_enrolled) {
    v.trust = Trust::trusted;
    v.summary = on + "; DKMS's certificate " + s.cert_path + " is enrolled (MOK): the modules it signs load" +
                (s.key_present ? "" : ", but its private key " + s.key_path + " is missing, so DKMS cannot sign");
    if (!s.key_present) {
      v.trust = Trust::untrusted;
      v.remediation = "Put the private key that belongs to " + s.cert_path + " at " + s.key_path +
                      " (or name both in /etc/dkms/framework.conf.d/), or make a new pair and enrol it: " + enrol;
    }
    return v;
  }
  if (s.cert_queued && *s.cert_queued) {
    v.trust = Trust::queued;
    v.summary = on + "; DKMS's certificate " + s.cert_path +
                " is queued for enrolment but not yet trusted: modules it "
                "signs load only after the next boot, once an operator confirms the key at the MokManager screen";
    v.remediation =
        "Reboot with a person at the console: MokManager asks to Enroll MOK; choose Continue, Yes, type the "
        "password given to mokutil --import, then reboot";
    return v;
  }
  if (!s.cert_enrolled || !s.cert_queued) {
    v.trust = Trust::unknown;
    v.summary =
        on + "; whether DKMS's certificate " + s.cert_path + " is enrolled could not be read (shim's MokListRT)";
    v.remediation = "Check with `mokutil --test-key " + s.cert_path + "`; if it is not enrolled: " + enrol;
    return v;
  }
  v.trust = Trust::untrusted;
  v.summary = on + "; DKMS's certificate " + s.cert_path +
              " is neither enrolled nor queued: the kernel would refuse "
              "every module DKMS signs with it (\"Key was rejected by service\")";
  v.remediation = "Before any build: " + enrol;
  return v;
}

std::optional<std::string> build_refusal(const SecureBootState& s) {
  const auto v = decide_signing(s);
  if (v.trust == Trust::untrusted || v.trust == Trust::no_key) { return v.summary + ". Fix: " + v.remediation; }
  return std::nullopt;
}

std::optional<std::string> load_refusal(const SecureBootState& s) {
  const auto v = decide_signing(s);
  if (v.trust == Trust::queued) { return v.summary + ". " + v.remediation; }
  return std::nullopt;
}

}  // namespace p2pnode::secureboot
