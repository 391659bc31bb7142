#pragma once
// Throwaway certificates and keys for the TLS tests, made in memory with OpenSSL (no CLI).
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "unit/temp_dir.hpp"

namespace p2pnode::test {

struct TestPem {
  std::string cert, key;
};

inline std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

// A P-256 key and a certificate for it, self-signed (issuer_key null) or signed by issuer_key.
inline TestPem make_pem(const std::string& cn, EVP_PKEY** key_out = nullptr, EVP_PKEY* issuer_key = nullptr,
                        const std::string& passphrase = "") {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, x, x, nullptr, nullptr, 0);
  if (X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost")) {
    X509_add_ext(x, san, -1);
    X509_EXTENSION_free(san);
  }
  X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256());
  BIO* c = BIO_new(BIO_s_mem());
  BIO* k = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(c, x);
  if (passphrase.empty()) {
    PEM_write_bio_PrivateKey(k, key, nullptr, nullptr, 0, nullptr, nullptr);
  } else {
    PEM_write_bio_PrivateKey(k, key, EVP_aes_256_cbc(), reinterpret_cast<const unsigned char*>(passphrase.data()),
                             static_cast<int>(passphrase.size()), nullptr, nullptr);
  }
  TestPem out{bio_text(c), bio_text(k)};
  BIO_free(c);
  BIO_free(k);
  X509_free(x);
  if (key_out) {
    *key_out = key;
  } else {
    EVP_PKEY_free(key);
  }
  return out;
}

inline void write_file(const std::filesystem::path& p, const std::string& text, std::filesystem::perms mode) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
  std::filesystem::permissions(p, mode);
}

}  // namespace p2pnode::test
