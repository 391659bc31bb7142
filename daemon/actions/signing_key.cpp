#include "actions/signing_key.hpp"

#include <filesystem>

#include "core/grammar.hpp"

namespace p2pnode::actions {

MadeKey make_signing_key(const sys::SysRoot& root, sys::CommandRunner& runner, const SecureBootState& s) {
  if (s.key_present || s.cert_present) { return {false, "DKMS's key or certificate exists already: nothing made"}; }
  for (const auto& p : {s.key_path, s.cert_path}) {
    if (const auto st = root.make_dirs(std::filesystem::path(p).parent_path().string()); !st) {
      return {false, "cannot make the directory of " + p + ": " + st.error().message};
    }
  }
  sys::Command c;
  // OpenSSL 3 creates the private key file with mode 0600.
  c.argv = {"openssl",
            "req",
            "-new",
            "-x509",
            "-nodes",
            "-days",
            "36500",
            "-subj",
            "/CN=DKMS module signing key",
            "-newkey",
            "rsa:2048",
            "-keyout",
            root.host_path(s.key_path).string(),
            "-addext",
            "extendedKeyUsage=codeSigning",
            "-outform",
            "DER",
            "-out",
            root.host_path(s.cert_path).string()};
  c.timeout = std::chrono::seconds(60);
  const auto r = runner.run(c);
  if (r.start_failed) { return {false, "openssl is not installed (the p2pnode package depends on it): no key made"}; }
  if (!r.success() || !root.exists(s.key_path) || !root.exists(s.cert_path)) {
    std::string err = r.err.substr(0, 300);
    return {false, "openssl could not make the key (" + r.describe() + (err.empty() ? "" : ": " + err) + ")"};
  }
  return {true, "made DKMS's signing key " + s.key_path + " and certificate " + s.cert_path + " (openssl, RSA 2048)"};
}

std::string signing_drop_in(const ModuleSigning& s) {
  return "# Written by p2pnode from the profile's driver.kernel_module.signing: DKMS signs every module\n"
         "# it builds with this key (its certificate is the one to enrol with mokutil).\n"
         "mok_signing_key=" +
         grammar::shell_quote(s.key) + "\nmok_certificate=" + grammar::shell_quote(s.certificate) + "\n";
}

Result<bool> point_dkms_at(const sys::SysRoot& root, const ModuleSigning& s) {
  // DKMS's safe_source reads the file, then the values again inside "…": only plain paths survive.
  for (const auto& p : {s.key, s.certificate}) {
    if (!grammar::is_safe_absolute_path(p)) {
      return Error{"writing " + std::string(kSigningDropIn) + ": '" + grammar::shell_comment_text(p) +
                   "' is not an absolute path of letters, digits and ._+@:/- (DKMS re-reads it as shell)"};
    }
  }
  const std::string want = signing_drop_in(s);
  if (auto have = root.read_text(kSigningDropIn); have && *have == want) { return false; }
  if (auto st = root.make_dirs("/etc/dkms/framework.conf.d"); !st) { return st.error(); }
  if (auto st = root.write_file_atomic(kSigningDropIn, want); !st) { return st.error(); }
  return true;
}

}  // namespace p2pnode::actions
