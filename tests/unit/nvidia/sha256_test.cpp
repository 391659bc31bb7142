#include <gtest/gtest.h>

#include <string>

#include "nvidia/sha256.hpp"

namespace p2pnode::nvidia {
namespace {

// FIPS 180-4 / NIST example vectors.
TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, StreamingEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 5000; ++i) { data += static_cast<char>(i * 7 + 3); }
  for (std::size_t chunk : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 1000u}) {
    Sha256 h;
    for (std::size_t i = 0; i < data.size(); i += chunk) { h.update(std::string_view(data).substr(i, chunk)); }
    EXPECT_EQ(h.hex(), sha256_hex(data)) << "chunk " << chunk;
  }
}

}  // namespace
}  // namespace p2pnode::nvidia
