// to_pem: the identity GnuTLS (libmicrohttpd) is given is the one p2pnode checked, chain order
// kept, and it reads back as a matching pair.
#include "tls/pem.hpp"

#include <gtest/gtest.h>

#include "unit/tls/test_pki.hpp"

using namespace p2pnode;

TEST(TlsPem, RoundTripsTheChainInOrderAndTheKey) {
  test::TempDir d("tls-pem");
  EVP_PKEY* ca_key = nullptr;
  const auto ca = test::make_pem("intermediate", &ca_key);
  EVP_PKEY* leaf_key = nullptr;
  const auto leaf = test::make_pem("leaf", &leaf_key, ca_key);
  EVP_PKEY_free(ca_key);
  EVP_PKEY_free(leaf_key);
  test::write_file(d.path() / "chain.pem", leaf.cert + ca.cert, std::filesystem::perms::owner_read);
  test::write_file(d.path() / "key.pem", leaf.key, std::filesystem::perms::owner_read);
  auto id = tls::make_identity(tls::read_certificate_chain(d.path() / "chain.pem").value(),
                               tls::read_private_key(d.path() / "key.pem").value());
  ASSERT_TRUE(id.ok()) << id.error().message;

  const auto pem = tls::to_pem(**id);
  EXPECT_EQ(pem.chain, leaf.cert + ca.cert);  // leaf first, then the intermediate, as read
  ASSERT_FALSE(pem.key.empty());
  EXPECT_NE(std::string(pem.key.c_str()).find("-----BEGIN PRIVATE KEY-----"), std::string::npos);
  test::write_file(d.path() / "again.pem", pem.chain, std::filesystem::perms::owner_read);
  test::write_file(d.path() / "again.key", pem.key.c_str(), std::filesystem::perms::owner_read);
  auto again = tls::make_identity(tls::read_certificate_chain(d.path() / "again.pem").value(),
                                  tls::read_private_key(d.path() / "again.key").value());
  EXPECT_TRUE(again.ok());
}

TEST(TlsPem, SecretPemMovesAndForgets) {
  tls::SecretPem a(std::string("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"));
  tls::SecretPem b(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is wiped, on purpose
  EXPECT_FALSE(b.empty());
}
