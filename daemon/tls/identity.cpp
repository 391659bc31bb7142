#include "tls/identity.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "sys/private_file.hpp"

namespace p2pnode::tls {

void OpenSslFree::operator()(X509* p) const { X509_free(p); }
void OpenSslFree::operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
void OpenSslFree::operator()(STACK_OF(X509) * p) const { sk_X509_pop_free(p, X509_free); }

namespace {
constexpr std::size_t kMaxPemBytes = 1 << 20;

// The reason of OpenSSL's most recent error ("bad base64 decode"), and a clean queue after.
std::string openssl_reason() {
  const char* reason = ERR_reason_error_string(ERR_peek_last_error());
  std::string why = reason ? reason : "no details from OpenSSL";
  ERR_clear_error();
  return why;
}

Result<std::string> read_pem_text(const std::filesystem::path& file, const std::string& what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) { return Error{what + " " + file.string() + ": cannot be read: " + std::strerror(errno), errno}; }
  std::string text;
  text.reserve(4096);
  for (std::istreambuf_iterator<char> it(in), end; it != end; ++it) {
    if (text.size() == kMaxPemBytes) {
      return Error{what + " " + file.string() + " is larger than 1 MiB; expected a PEM file"};
    }
    text.push_back(*it);
  }
  if (in.bad()) { return Error{what + " " + file.string() + ": cannot be read: " + std::strerror(errno), errno}; }
  return text;
}

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;
BioPtr memory_bio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), &BIO_free);
}

// Refuses encrypted keys instead of prompting on the daemon's terminal.
int no_passphrase(char*, int, int, void*) { return -1; }

std::string format_time(const ASN1_TIME* t) {
  BioPtr bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (!bio || ASN1_TIME_print(bio.get(), t) != 1) { return "?"; }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}
}  // namespace

std::string Identity::describe() const {
  char subject[256] = {};
  X509_NAME_oneline(X509_get_subject_name(certificate()), subject, sizeof subject);
  std::string s = std::string("subject ") + subject + ", valid until " + format_time(X509_get0_notAfter(certificate()));
  if (const int n = sk_X509_num(intermediates()); n > 0) { s += ", " + std::to_string(n) + " intermediate(s)"; }
  return s;
}

Result<CertificateChain> read_certificate_chain(const std::filesystem::path& file) {
  const std::string what = "TLS certificate file";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) { return Error{what + " " + file.string() + ": no such file", ENOENT}; }
  if (!std::filesystem::is_regular_file(file, ec)) {
    return Error{what + " " + file.string() + " is not a regular file"};
  }
  auto text = read_pem_text(file, what);
  if (!text) { return text.error(); }
  auto bio = memory_bio(*text);
  CertificateChain chain{CertPtr(PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr)),
                         ChainPtr(sk_X509_new_null())};
  if (!chain.leaf) {
    return Error{what + " " + file.string() + " holds no PEM certificate (" + openssl_reason() +
                 "); expected '-----BEGIN CERTIFICATE-----', the server's certificate first"};
  }
  for (;;) {
    CertPtr next(PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr));
    if (!next) { break; }
    sk_X509_push(chain.intermediates.get(), next.release());
  }
  const unsigned long e = ERR_peek_last_error();
  if (e && !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)) {
    return Error{what + " " + file.string() + ": a certificate after the first is not valid PEM (" + openssl_reason() +
                 ")"};
  }
  ERR_clear_error();
  return chain;
}

Result<KeyPtr> read_private_key(const std::filesystem::path& file) {
  const std::string what = "TLS key file";
  auto text = sys::read_private_file(file, what, 1 << 20);  // checked and read on one descriptor
  if (!text) { return text.error(); }
  auto bio = memory_bio(*text);
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  if (!key) {
    const std::string name = what + " " + file.string();
    constexpr const char* kExpected = "; expected '-----BEGIN PRIVATE KEY-----' or an RSA/EC key in PEM";
    if (text->find("ENCRYPTED") != std::string::npos) {
      return Error{name + " is encrypted; the daemon cannot ask for a passphrase, so store it unencrypted (0600)"};
    }
    if (text->find("-----BEGIN") == std::string::npos) {
      return Error{name + " holds no PEM private key (no '-----BEGIN' line)" + kExpected};
    }
    return Error{name + " holds no PEM private key (" + openssl_reason() + ")" + kExpected};
  }
  ERR_clear_error();
  return key;
}

Result<std::shared_ptr<const Identity>> make_identity(CertificateChain chain, KeyPtr key) {
  if (X509_check_private_key(chain.leaf.get(), key.get()) != 1) {
    ERR_clear_error();
    return Error{"their public keys differ"};
  }
  return std::shared_ptr<const Identity>(std::make_shared<Identity>(std::move(chain), std::move(key)));
}

}  // namespace p2pnode::tls
