#include "tls/server_context.hpp"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "unit/tls/test_pki.hpp"

using namespace p2pnode;

namespace {
std::shared_ptr<const tls::Identity> identity_for(const std::string& cn) {
  test::TempDir d("tls-ctx");
  const auto pem = test::make_pem(cn);
  test::write_file(d.path / "c.pem", pem.cert, std::filesystem::perms::owner_read);
  test::write_file(d.path / "k.pem", pem.key, std::filesystem::perms::owner_read);
  auto chain = tls::read_certificate_chain(d.path / "c.pem");
  auto key = tls::read_private_key(d.path / "k.pem");
  return *tls::make_identity(std::move(chain).value(), std::move(key).value());
}

struct CtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
  void operator()(SSL* s) const { SSL_free(s); }
};

// One in-memory handshake; the server certificate's CN on success, "" on failure.
std::string handshake(SSL_CTX* server_ctx, int client_max_version) {
  std::unique_ptr<SSL_CTX, CtxFree> cctx(SSL_CTX_new(TLS_client_method()));
  SSL_CTX_set_security_level(cctx.get(), 0);  // let the client offer old versions; the server must refuse them
  SSL_CTX_set_cipher_list(cctx.get(), "ALL:@SECLEVEL=0");
  SSL_CTX_set_min_proto_version(cctx.get(), 0);
  SSL_CTX_set_max_proto_version(cctx.get(), client_max_version);
  std::unique_ptr<SSL, CtxFree> client(SSL_new(cctx.get())), server(SSL_new(server_ctx));
  BIO *cb = nullptr, *sb = nullptr;
  BIO_new_bio_pair(&cb, 0, &sb, 0);
  SSL_set_bio(client.get(), cb, cb);
  SSL_set_bio(server.get(), sb, sb);
  SSL_set_connect_state(client.get());
  SSL_set_accept_state(server.get());
  bool c_done = false, s_done = false;
  for (int i = 0; i < 100 && !(c_done && s_done); ++i) {
    if (!c_done) {
      const int r = SSL_do_handshake(client.get());
      if (r == 1) c_done = true;
      else if (SSL_get_error(client.get(), r) != SSL_ERROR_WANT_READ) break;
    }
    if (!s_done) {
      const int r = SSL_do_handshake(server.get());
      if (r == 1) s_done = true;
      else if (SSL_get_error(server.get(), r) != SSL_ERROR_WANT_READ) break;
    }
  }
  ERR_clear_error();
  if (!(c_done && s_done)) return "";
  X509* peer = SSL_get0_peer_certificate(client.get());
  char cn[128] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
  return cn;
}
}  // namespace

TEST(TlsServerContext, RequiresTls12AndServesTheCurrentIdentity) {
  tls::CurrentIdentity current(identity_for("first"));
  std::unique_ptr<SSL_CTX, CtxFree> ctx(SSL_CTX_new(TLS_server_method()));
  ASSERT_TRUE(tls::configure_server_context(*ctx, current).ok());
  EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx.get()), TLS1_2_VERSION);
  EXPECT_NE(SSL_CTX_get_options(ctx.get()) & SSL_OP_NO_COMPRESSION, 0u);

  EXPECT_EQ(handshake(ctx.get(), TLS1_3_VERSION), "first");
  EXPECT_EQ(handshake(ctx.get(), TLS1_2_VERSION), "first");
  EXPECT_EQ(handshake(ctx.get(), TLS1_1_VERSION), "") << "TLS 1.1 must be refused";

  current.set(identity_for("second"));  // SIGHUP: new connections get the new certificate
  EXPECT_EQ(handshake(ctx.get(), TLS1_3_VERSION), "second");
}
