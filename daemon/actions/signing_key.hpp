#pragma once
// DKMS's module signing key, made the way DKMS 3.x makes it (openssl: RSA 2048, self-signed, DER
// certificate, code signing) where Secure Boot is on and there is none, so that an operator can
// enrol it before the first build. DKMS 3.0.10 (Debian 12) has no `dkms generate_mok`; 3.2 does
// the same openssl call.
#include <string>

#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "core/result.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::actions {

struct MadeKey {
  bool made = false;
  std::string message;  // what was done, or why not
};
MadeKey make_signing_key(const sys::SysRoot& root, sys::CommandRunner& runner, const SecureBootState& s);

// DKMS 3.x reads framework.conf.d: this drop-in points it (for every DKMS module on the box) at the
// key the profile names. Written only when its text differs; true when written.
inline constexpr const char* kSigningDropIn = "/etc/dkms/framework.conf.d/p2pnode-signing.conf";
std::string signing_drop_in(const ModuleSigning& s);
Result<bool> point_dkms_at(const sys::SysRoot& root, const ModuleSigning& s);

}  // namespace p2pnode::actions
