#pragma once
// A node's root as the Secure Boot probe reads it: efivars in the UEFI layout (four bytes of
// attributes, then the value), shim's signature lists, lockdown, sig_enforce, DKMS's key pair.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "probe/probe.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::sbtest {
namespace fs = std::filesystem;
using EfiBytes = std::vector<std::uint8_t>;  // an efivar's contents

const std::string kSB = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";
const std::string kSetup = "sys/firmware/efi/efivars/SetupMode-8be4df61-93ca-11d2-aa0d-00e098032b8c";
const std::string kMokList = "sys/firmware/efi/efivars/MokListRT-605dab50-e046-4300-abb6-3dd810dd8b23";
const std::string kMokNew = "sys/firmware/efi/efivars/MokNew-605dab50-e046-4300-abb6-3dd810dd8b23";
const EfiBytes kAttrs = {0x06, 0x00, 0x00, 0x00};  // BOOTSERVICE_ACCESS | RUNTIME_ACCESS, as efivarfs shows them

inline void le32(EfiBytes& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) { b.push_back(static_cast<std::uint8_t>(v >> (8 * i))); }
}
// One EFI_SIGNATURE_LIST of X509 certificates (each its own list, as shim writes MokListRT).
inline EfiBytes esl(const std::vector<EfiBytes>& certs, bool with_hash_list = false) {
  EfiBytes b = kAttrs;
  if (with_hash_list) {  // an EFI_CERT_SHA256 list first: skipped
    const EfiBytes sha256 = {0x26, 0x16, 0xc4, 0xc1, 0x4c, 0x50, 0x92, 0x40,
                             0xac, 0xa9, 0x41, 0xf9, 0x36, 0x93, 0x43, 0x28};
    b.insert(b.end(), sha256.begin(), sha256.end());
    le32(b, 28 + 48);
    le32(b, 0);
    le32(b, 48);
    b.insert(b.end(), 48, 0xab);
  }
  const EfiBytes x509 = {0xa1, 0x59, 0xc0, 0xa5, 0xe4, 0x94, 0xa7, 0x4a,
                         0x87, 0xb5, 0xab, 0x15, 0x5c, 0x2b, 0xf0, 0x72};
  for (const auto& c : certs) {
    b.insert(b.end(), x509.begin(), x509.end());
    le32(b, static_cast<std::uint32_t>(28 + 16 + c.size()));
    le32(b, 0);
    le32(b, static_cast<std::uint32_t>(16 + c.size()));
    b.insert(b.end(), 16, 0x11);  // the owner GUID
    b.insert(b.end(), c.begin(), c.end());
  }
  return b;
}
inline EfiBytes der(char tag) {  // a stand-in certificate: the decoders compare bytes, they do not parse X.509
  EfiBytes c = {0x30, 0x82, 0x01, 0x0a};
  c.insert(c.end(), 266, static_cast<std::uint8_t>(tag));
  return c;
}

struct Node {
  p2pnode::test::TempDir tmp{"sb"};
  fs::path dir = tmp.path();
  void write(const std::string& rel, const EfiBytes& b) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  void text(const std::string& rel, const std::string& t) const { write(rel, EfiBytes(t.begin(), t.end())); }
  // A UEFI node with Secure Boot `on`, lockdown integrity, DKMS's key pair made.
  void uefi(bool on, bool setup = false) const {
    write(kSB, {0x06, 0, 0, 0, static_cast<std::uint8_t>(on)});
    write(kSetup, {0x06, 0, 0, 0, static_cast<std::uint8_t>(setup)});
    text("sys/kernel/security/lockdown",
         on ? "none [integrity] confidentiality\n" : "[none] integrity confidentiality\n");
    // Debian's kernel enforces signatures when Secure Boot is on (not in setup mode).
    text("sys/module/module/parameters/sig_enforce", on && !setup ? "Y\n" : "N\n");
  }
  void dkms_key(char tag) const {
    text("var/lib/dkms/mok.key", "-----BEGIN PRIVATE KEY-----\n");
    write("var/lib/dkms/mok.pub", der(tag));
  }
  SecureBootState probe() const { return probe::probe_secure_boot(sys::SysRoot(dir)); }
};

}  // namespace p2pnode::sbtest
