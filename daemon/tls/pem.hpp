#pragma once
// The server side of TLS (libmicrohttpd over GnuTLS): the identity as the PEM text GnuTLS loads
// from memory, and the protocol settings as a GnuTLS priority string.
#include <string>

#include "tls/identity.hpp"

namespace p2pnode::tls {

// TLS 1.2 or 1.3 only; for TLS 1.2 forward-secret AEAD suites only (ECDHE with AES-GCM or
// ChaCha20-Poly1305, Mozilla's "intermediate" list); no compression, no renegotiation (GnuTLS
// offers neither to a client that did not ask for safe renegotiation); the server's order wins.
// X25519 first: it is the key share curl, OpenSSL and Python send first, so TLS 1.3 needs no
// HelloRetryRequest round trip.
inline constexpr const char* kGnutlsPriorities =
    "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-CIPHER-ALL:+AES-128-GCM:"
    "+AES-256-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:"
    "%SERVER_PRECEDENCE";

// A private key in PEM, wiped from memory when it goes.
class SecretPem {
 public:
  SecretPem() = default;
  explicit SecretPem(std::string text) : text_(std::move(text)) {}
  SecretPem(SecretPem&& o) noexcept : text_(std::move(o.text_)) { o.wipe(); }
  SecretPem& operator=(SecretPem&& o) noexcept;
  SecretPem(const SecretPem&) = delete;
  SecretPem& operator=(const SecretPem&) = delete;
  ~SecretPem() { wipe(); }
  const char* c_str() const { return text_.c_str(); }
  bool empty() const { return text_.empty(); }

 private:
  void wipe();
  std::string text_;
};

struct PemIdentity {
  std::string chain;  // the leaf certificate, then the intermediates
  SecretPem key;      // PKCS#8, unencrypted
};

// Empty strings when OpenSSL cannot write them (out of memory).
PemIdentity to_pem(const Identity& id);

}  // namespace p2pnode::tls
