#pragma once
// Secure Boot as the firmware, the kernel and DKMS describe it: pure decoders of what they write.
// - efivars (/sys/firmware/efi/efivars/<Name>-<GUID>): 4 bytes of attributes, then the variable's
//   data. SecureBoot and SetupMode are one byte (1 = on); MokListRT (shim's enrolled Machine Owner
//   Keys, mirrored for the OS) and MokNew (keys mokutil queued for the next boot's MokManager) are
//   EFI_SIGNATURE_LISTs (UEFI 2.x, 32.4.1): SignatureType GUID, ListSize, HeaderSize, SignatureSize,
//   then entries of an owner GUID and the signature data (a DER certificate for EFI_CERT_X509_GUID).
// - /sys/kernel/security/lockdown: "none [integrity] confidentiality", the current one bracketed.
// - DKMS's framework.conf (and framework.conf.d/*.conf): shell assignments mok_signing_key= and
//   mok_certificate= (DKMS 3.x; without them it uses /var/lib/dkms/mok.key and mok.pub).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode::secureboot {

inline constexpr std::string_view kGlobalGuid = "8be4df61-93ca-11d2-aa0d-00e098032b8c";  // EFI_GLOBAL_VARIABLE
inline constexpr std::string_view kShimGuid = "605dab50-e046-4300-abb6-3dd810dd8b23";    // shim's MOK variables

// A one-byte boolean variable (SecureBoot, SetupMode): nullopt when the data is not 4 + 1 bytes.
std::optional<bool> decode_efi_bool(std::span<const std::uint8_t> var);

// The DER certificates in an EFI_SIGNATURE_LIST variable (after its 4 attribute bytes); entries of
// other types (hashes) are skipped. nullopt: the lists are malformed (a length runs past the end).
std::optional<std::vector<std::vector<std::uint8_t>>> decode_esl_certs(std::span<const std::uint8_t> var);

// "none [integrity] confidentiality" -> "integrity"; "" when nothing is bracketed.
std::string decode_lockdown(std::string_view text);

struct DkmsSigning {
  std::string key = "/var/lib/dkms/mok.key";   // DKMS 3.x's defaults
  std::string cert = "/var/lib/dkms/mok.pub";  // DER
  bool from_config = false;                    // a framework.conf set either
};
// Applies framework.conf texts in order (the main file, then framework.conf.d/*.conf sorted).
DkmsSigning decode_dkms_signing(const std::vector<std::string>& framework_texts);

}  // namespace p2pnode::secureboot
