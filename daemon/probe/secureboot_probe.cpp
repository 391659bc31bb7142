// Secure Boot, lockdown and the key DKMS signs modules with, read through the SysRoot; decoded by
// secureboot/efi.hpp. Only reads: efivars, securityfs, sysfs, DKMS's configuration and key files.
#include <algorithm>

#include "probe/probe.hpp"
#include "secureboot/efi.hpp"
#include "sys/private_file.hpp"

namespace p2pnode::probe {

namespace {
constexpr const char* kEfivars = "/sys/firmware/efi/efivars";
std::string var(std::string_view name, std::string_view guid) {
  return std::string(kEfivars) + "/" + std::string(name) + "-" + std::string(guid);
}
}  // namespace

SecureBootState probe_secure_boot(const sys::SysRoot& root, const ModuleSigning* profile_key) {
  SecureBootState s;
  s.efi = root.is_dir("/sys/firmware/efi");
  if (s.efi) {
    if (auto b = root.read_bytes(var("SecureBoot", secureboot::kGlobalGuid), 64)) {
      s.enabled = secureboot::decode_efi_bool(*b);
    } else {
      s.problem = "no SecureBoot variable in " + std::string(kEfivars) + " (efivarfs not mounted?)";
    }
    if (auto b = root.read_bytes(var("SetupMode", secureboot::kGlobalGuid), 64)) {
      s.setup_mode = secureboot::decode_efi_bool(*b);
    }
  }
  if (auto t = root.read_text("/sys/kernel/security/lockdown")) { s.lockdown = secureboot::decode_lockdown(*t); }
  if (auto t = root.read_attr("/sys/module/module/parameters/sig_enforce")) { s.sig_enforce = *t == "Y"; }
  std::vector<std::string> conf;
  if (auto t = root.read_text("/etc/dkms/framework.conf")) { conf.push_back(*t); }
  auto extra = root.list_dir("/etc/dkms/framework.conf.d");
  std::sort(extra.begin(), extra.end());
  for (const auto& f : extra) {
    if (f.size() > 5 && f.substr(f.size() - 5) == ".conf") {
      if (auto t = root.read_text(sys::join("/etc/dkms/framework.conf.d", f))) { conf.push_back(*t); }
    }
  }
  const auto signing = secureboot::decode_dkms_signing(conf);
  s.key_path = signing.key;
  s.cert_path = signing.cert;
  s.key_from_config = signing.from_config;
  if (profile_key) {
    s.key_path = profile_key->key;
    s.cert_path = profile_key->certificate;
    s.key_from_profile = true;
  }
  s.key_present = root.exists(s.key_path);
  // Whoever can read the private key can sign modules the kernel will trust: checked on the open file.
  if (s.key_present) {
    if (auto st = sys::check_owner_only(root.host_path(s.key_path), "DKMS's signing key"); !st) {
      s.key_problem = st.error().message;
    }
  }
  const auto cert = root.read_bytes(s.cert_path, 64 << 10);
  s.cert_present = static_cast<bool>(cert);
  if (s.efi && cert) {
    // efivarfs not mounted (an empty directory): shim's lists are unknown, not empty.
    const bool efivarfs = !root.list_dir(kEfivars).empty();
    auto in = [&](std::string_view name) -> std::optional<bool> {
      if (!efivarfs) { return std::nullopt; }
      const auto b = root.read_bytes(var(name, secureboot::kShimGuid), 1 << 20);
      if (!b) {
        return false;  // no such variable: nothing enrolled or queued
      }
      const auto certs = secureboot::decode_esl_certs(*b);
      if (!certs) { return std::nullopt; }
      return std::find(certs->begin(), certs->end(), *cert) != certs->end();
    };
    s.cert_enrolled = in("MokListRT");
    s.cert_queued = in("MokNew");
  }
  return s;
}

void use_profile_signing(const sys::SysRoot& root, const Profile& p, Inventory& inv) {
  if (p.driver && p.driver->kernel_module && p.driver->kernel_module->signing) {
    inv.secure_boot = probe_secure_boot(root, &*p.driver->kernel_module->signing);
  }
}

}  // namespace p2pnode::probe
