#pragma once
// A TLS identity: the certificate chain the daemon serves and its private key, read from PEM
// files and checked to belong together before anything listens with them.
#include <openssl/x509.h>  // STACK_OF(X509) must be declared outside our namespace

#include <filesystem>
#include <memory>
#include <string>

#include "core/result.hpp"

namespace p2pnode::tls {

struct OpenSslFree {
  void operator()(X509* p) const;
  void operator()(EVP_PKEY* p) const;
  void operator()(STACK_OF(X509) * p) const;
};
using CertPtr = std::unique_ptr<X509, OpenSslFree>;
using KeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree>;
using ChainPtr = std::unique_ptr<STACK_OF(X509), OpenSslFree>;

// The leaf certificate first, then any intermediates, in file order.
struct CertificateChain {
  CertPtr leaf;
  ChainPtr intermediates;  // never null; may be empty
};

class Identity {
 public:
  Identity(CertificateChain chain, KeyPtr key) : chain_(std::move(chain)), key_(std::move(key)) {}
  X509* certificate() const { return chain_.leaf.get(); }
  STACK_OF(X509) * intermediates() const { return chain_.intermediates.get(); }
  EVP_PKEY* key() const { return key_.get(); }
  // "subject CN=node1, valid until Jun  1 12:00:00 2027 GMT", for the log.
  std::string describe() const;

 private:
  CertificateChain chain_;
  KeyPtr key_;
};

// Only read files (host paths). Errors say which file, what was wrong and what is expected.
Result<CertificateChain> read_certificate_chain(const std::filesystem::path& cert_file);
// The key file must be readable by its owner only (like the token file) and not encrypted.
Result<KeyPtr> read_private_key(const std::filesystem::path& key_file);
// Pure: an error when the key is not the certificate's.
Result<std::shared_ptr<const Identity>> make_identity(CertificateChain chain, KeyPtr key);

}  // namespace p2pnode::tls
