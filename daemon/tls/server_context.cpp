#include "tls/server_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace p2pnode::tls {

void CurrentIdentity::set(std::shared_ptr<const Identity> id) {
  std::lock_guard lk(mu_);
  id_ = std::move(id);
}

std::shared_ptr<const Identity> CurrentIdentity::get() const {
  std::lock_guard lk(mu_);
  return id_;
}

namespace {
// Mozilla's "intermediate" TLS 1.2 list; TLS 1.3 suites are OpenSSL's defaults (all AEAD).
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// Runs in the handshake, before the cipher is chosen, so an EC or RSA key picks its own suites.
int use_current_identity(SSL* ssl, void* arg) {
  const auto id = static_cast<const CurrentIdentity*>(arg)->get();
  if (!id) return 0;
  // SSL_use_cert_and_key takes its own references, so the identity may be swapped after this.
  return SSL_use_cert_and_key(ssl, id->certificate(), id->key(), id->intermediates(), 1) == 1 ? 1 : 0;
}
}  // namespace

Status configure_server_context(SSL_CTX& ctx, const CurrentIdentity& current) {
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return Error{"cannot require TLS 1.2 or later"};
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                                SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  if (SSL_CTX_set_cipher_list(&ctx, kTls12Ciphers) != 1) {
    ERR_clear_error();
    return Error{"this OpenSSL offers none of the TLS 1.2 ECDHE AEAD ciphers"};
  }
  SSL_CTX_set_cert_cb(&ctx, use_current_identity, const_cast<CurrentIdentity*>(&current));
  return Status::success();
}

}  // namespace p2pnode::tls
