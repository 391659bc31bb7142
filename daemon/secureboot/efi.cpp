#include "secureboot/efi.hpp"

namespace p2pnode::secureboot {

namespace {
std::uint32_t le32(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint32_t>(b[at]) | static_cast<std::uint32_t>(b[at + 1]) << 8 |
         static_cast<std::uint32_t>(b[at + 2]) << 16 | static_cast<std::uint32_t>(b[at + 3]) << 24;
}
// EFI_CERT_X509_GUID a5c059a1-94e4-4aa7-87b5-ab155c2bf072, as it lies in memory (the first three
// fields little-endian).
constexpr std::uint8_t kX509[16] = {0xa1, 0x59, 0xc0, 0xa5, 0xe4, 0x94, 0xa7, 0x4a,
                                    0x87, 0xb5, 0xab, 0x15, 0x5c, 0x2b, 0xf0, 0x72};

std::string unquote(std::string_view v) {
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) { v.remove_suffix(1); }
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    v = v.substr(1, v.size() - 2);
  }
  return std::string(v);
}
}  // namespace

std::optional<bool> decode_efi_bool(std::span<const std::uint8_t> var) {
  if (var.size() != 5) { return std::nullopt; }
  return var[4] != 0;
}

std::optional<std::vector<std::vector<std::uint8_t>>> decode_esl_certs(std::span<const std::uint8_t> var) {
  if (var.size() < 4) { return std::nullopt; }
  const auto data = var.subspan(4);
  std::vector<std::vector<std::uint8_t>> out;
  std::size_t at = 0;
  while (at < data.size()) {
    if (data.size() - at < 28) { return std::nullopt; }
    const std::uint32_t list = le32(data, at + 16), header = le32(data, at + 20), size = le32(data, at + 24);
    if (list < 28 || list > data.size() - at || size < 16 || header > list - 28) { return std::nullopt; }
    const bool x509 = std::equal(std::begin(kX509), std::end(kX509), data.begin() + static_cast<std::ptrdiff_t>(at));
    const std::size_t entries = at + 28 + header, end = at + list;
    if ((end - entries) % size != 0) { return std::nullopt; }
    for (std::size_t e = entries; e < end; e += size) {
      if (x509) {
        out.emplace_back(data.begin() + static_cast<std::ptrdiff_t>(e + 16),
                         data.begin() + static_cast<std::ptrdiff_t>(e + size));
      }
    }
    at = end;
  }
  return out;
}

std::string decode_lockdown(std::string_view text) {
  const auto open = text.find('['), close = text.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) { return ""; }
  return std::string(text.substr(open + 1, close - open - 1));
}

DkmsSigning decode_dkms_signing(const std::vector<std::string>& texts) {
  DkmsSigning s;
  for (const auto& t : texts) {
    std::size_t pos = 0;
    while (pos <= t.size()) {
      const auto nl = t.find('\n', pos);
      std::string_view line(t.data() + pos, (nl == std::string::npos ? t.size() : nl) - pos);
      pos = nl == std::string::npos ? t.size() + 1 : nl + 1;
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) { line.remove_prefix(1); }
      if (line.empty() || line.front() == '#') { continue; }
      for (const auto& [name, field] : {std::pair<std::string_view, std::string*>{"mok_signing_key=", &s.key},
                                        std::pair<std::string_view, std::string*>{"mok_certificate=", &s.cert}}) {
        if (line.substr(0, name.size()) == name) {
          *field = unquote(line.substr(name.size()));
          s.from_config = true;
        }
      }
    }
  }
  return s;
}

}  // namespace p2pnode::secureboot
