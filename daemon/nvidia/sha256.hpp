#pragma once
// SHA-256 (FIPS 180-4), small and self-contained: the daemon's build links no crypto library
// and the artifacts check needs only this one digest. Tested against the FIPS vectors and sha256sum.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace p2pnode::nvidia {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<std::uint8_t, 32> digest();  // finishes; the object is spent afterwards
  std::string hex();                      // lowercase, as sha256sum prints it

 private:
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace p2pnode::nvidia
