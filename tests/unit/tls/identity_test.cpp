#include "tls/identity.hpp"

#include <gtest/gtest.h>

#include "unit/tls/test_pki.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;
using test::TempDir;
using test::write_file;

namespace {
constexpr auto kOwnerOnly = fs::perms::owner_read | fs::perms::owner_write;
constexpr auto kWorldReadable = kOwnerOnly | fs::perms::group_read | fs::perms::others_read;
}  // namespace

TEST(TlsIdentity, ReadsAMatchingPair) {
  TempDir d("tls-id");
  const auto pem = test::make_pem("node1.example");
  write_file(d.path() / "cert.pem", pem.cert, kWorldReadable);
  write_file(d.path() / "key.pem", pem.key, kOwnerOnly);
  auto chain = tls::read_certificate_chain(d.path() / "cert.pem");
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  auto key = tls::read_private_key(d.path() / "key.pem");
  ASSERT_TRUE(key.ok()) << key.error().message;
  auto id = tls::make_identity(std::move(chain).value(), std::move(key).value());
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_NE((*id)->describe().find("CN=node1.example"), std::string::npos) << (*id)->describe();
  EXPECT_NE((*id)->describe().find("valid until"), std::string::npos);
}

TEST(TlsIdentity, KeepsIntermediatesInOrder) {
  TempDir d("tls-chain");
  EVP_PKEY* ca_key = nullptr;
  const auto ca = test::make_pem("intermediate", &ca_key);
  const auto leaf = test::make_pem("leaf", nullptr, ca_key);
  EVP_PKEY_free(ca_key);
  write_file(d.path() / "chain.pem", leaf.cert + ca.cert, kWorldReadable);
  auto chain = tls::read_certificate_chain(d.path() / "chain.pem");
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  EXPECT_EQ(sk_X509_num(chain->intermediates.get()), 1);
}

TEST(TlsIdentity, RejectsGarbageAndMissingCertificates) {
  TempDir d("tls-garbage");
  write_file(d.path() / "garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n",
             kWorldReadable);
  write_file(d.path() / "text.pem", "hello\n", kWorldReadable);
  for (const char* f : {"garbage.pem", "text.pem"}) {
    auto r = tls::read_certificate_chain(d.path() / f);
    ASSERT_FALSE(r.ok()) << f;
    EXPECT_NE(r.error().message.find("holds no PEM certificate"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("BEGIN CERTIFICATE"), std::string::npos) << r.error().message;
  }
  auto missing = tls::read_certificate_chain(d.path() / "none.pem");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no such file"), std::string::npos) << missing.error().message;
  // A key where the certificate goes is no certificate.
  write_file(d.path() / "key-as-cert.pem", test::make_pem("x").key, kWorldReadable);
  EXPECT_FALSE(tls::read_certificate_chain(d.path() / "key-as-cert.pem").ok());
}

TEST(TlsIdentity, KeyMustBeOwnerOnlyValidAndUnencrypted) {
  TempDir d("tls-key");
  const auto pem = test::make_pem("n");
  write_file(d.path() / "open.pem", pem.key, kWorldReadable);
  auto open = tls::read_private_key(d.path() / "open.pem");
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("readable by group or others (mode 644)"), std::string::npos)
      << open.error().message;
  EXPECT_NE(open.error().message.find("TLS key file"), std::string::npos);

  write_file(d.path() / "group.pem", pem.key, kOwnerOnly | fs::perms::group_read);
  EXPECT_FALSE(tls::read_private_key(d.path() / "group.pem").ok());

  write_file(d.path() / "garbage.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", kOwnerOnly);
  auto garbage = tls::read_private_key(d.path() / "garbage.pem");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().message.find("holds no PEM private key"), std::string::npos) << garbage.error().message;

  write_file(d.path() / "enc.pem", test::make_pem("n", nullptr, nullptr, "secret-passphrase").key, kOwnerOnly);
  auto enc = tls::read_private_key(d.path() / "enc.pem");
  ASSERT_FALSE(enc.ok());
  EXPECT_NE(enc.error().message.find("encrypted"), std::string::npos) << enc.error().message;

  EXPECT_FALSE(tls::read_private_key(d.path() / "none.pem").ok());
}

TEST(TlsIdentity, RefusesAKeyOfAnotherCertificate) {
  TempDir d("tls-mismatch");
  write_file(d.path() / "cert.pem", test::make_pem("a").cert, kWorldReadable);
  write_file(d.path() / "key.pem", test::make_pem("b").key, kOwnerOnly);
  auto chain = tls::read_certificate_chain(d.path() / "cert.pem");
  auto key = tls::read_private_key(d.path() / "key.pem");
  ASSERT_TRUE(chain.ok() && key.ok());
  auto id = tls::make_identity(std::move(chain).value(), std::move(key).value());
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message.find("public keys differ"), std::string::npos) << id.error().message;
}
