#pragma once
// The server side of TLS: protocol settings, and the identity each new connection is served
// with, which SIGHUP can replace without a restart.
#include <openssl/types.h>

#include <memory>
#include <mutex>

#include "core/result.hpp"
#include "tls/identity.hpp"

namespace p2pnode::tls {

// The identity for new handshakes; connections already open keep theirs.
class CurrentIdentity {
 public:
  explicit CurrentIdentity(std::shared_ptr<const Identity> id) : id_(std::move(id)) {}
  void set(std::shared_ptr<const Identity> id);
  std::shared_ptr<const Identity> get() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Identity> id_;
};

// Changes only `ctx`: TLS 1.2 at least, forward-secret AEAD ciphers for TLS 1.2, no compression
// or renegotiation, and every handshake takes its certificate from `current` (which must outlive
// ctx).
Status configure_server_context(SSL_CTX& ctx, const CurrentIdentity& current);

}  // namespace p2pnode::tls
