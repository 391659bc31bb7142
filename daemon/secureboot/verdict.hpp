#pragma once
// Will the kernel load the modules DKMS builds? Pure decisions on what the probe read: Secure Boot
// off (or in setup mode) loads anything; on, a module loads only when signed by a key the kernel
// trusts (here: DKMS's certificate enrolled as a Machine Owner Key). A key queued with mokutil is
// trusted only after an operator confirms it at the next boot's MokManager screen.
#include <optional>
#include <string>

#include "core/inventory.hpp"

namespace p2pnode::secureboot {

enum class Trust {
  not_enforced,  // no UEFI, Secure Boot off, or setup mode
  trusted,       // Secure Boot on, DKMS's certificate enrolled
  queued,        // on, the certificate queued for enrolment (MokNew)
  untrusted,     // on, a certificate the kernel does not trust
  no_key,        // on, DKMS has no key yet (it would make one at its first build, untrusted)
  unknown,       // on, but shim's lists could not be read
};
const char* to_string(Trust t);

struct SigningVerdict {
  Trust trust = Trust::not_enforced;
  std::string summary;      // one line
  std::string remediation;  // what an operator does (empty when nothing)
};
SigningVerdict decide_signing(const SecureBootState& s);

// Why a DKMS build must not start (the kernel would refuse what it builds): untrusted or no key.
std::optional<std::string> build_refusal(const SecureBootState& s);
// Why a module must not be (re)loaded now: its key is only queued; the next boot, confirmed at the
// console, makes it loadable.
std::optional<std::string> load_refusal(const SecureBootState& s);

}  // namespace p2pnode::secureboot
