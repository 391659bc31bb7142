#include "tls/pem.hpp"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>

namespace p2pnode::tls {
namespace {
using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

std::string drain(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string s(data, static_cast<std::size_t>(n > 0 ? n : 0));
  if (n > 0) { OPENSSL_cleanse(data, static_cast<std::size_t>(n)); }
  return s;
}
}  // namespace

SecretPem& SecretPem::operator=(SecretPem&& o) noexcept {
  if (this != &o) {
    wipe();
    text_ = std::move(o.text_);
    o.wipe();
  }
  return *this;
}

void SecretPem::wipe() {
  if (!text_.empty()) { OPENSSL_cleanse(text_.data(), text_.size()); }
  text_.clear();
}

PemIdentity to_pem(const Identity& id) {
  PemIdentity out;
  BioPtr certs(BIO_new(BIO_s_mem()), &BIO_free);
  bool ok = certs && PEM_write_bio_X509(certs.get(), id.certificate()) == 1;
  for (int i = 0; ok && i < sk_X509_num(id.intermediates()); ++i) {
    ok = PEM_write_bio_X509(certs.get(), sk_X509_value(id.intermediates(), i)) == 1;
  }
  if (ok) { out.chain = drain(certs.get()); }
  BioPtr key(BIO_new(BIO_s_secmem()), &BIO_free);
  if (key && PEM_write_bio_PrivateKey(key.get(), id.key(), nullptr, nullptr, 0, nullptr, nullptr) == 1) {
    out.key = SecretPem(drain(key.get()));
  }
  return out;
}

}  // namespace p2pnode::tls
