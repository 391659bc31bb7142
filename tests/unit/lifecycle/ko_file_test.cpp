#include "lifecycle/ko_file.hpp"

#include <gtest/gtest.h>
#include <lzma.h>
#include <zstd.h>

#include <string>

namespace p2pnode::lifecycle {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

// A module's ELF as far as .modinfo goes: other sections' bytes, then key=value strings.
const std::string kElf = std::string(
                             "\x7f"
                             "ELF\x02\x01",
                             6) +
                         std::string(300, '\x5a') + std::string(1, '\0') + "version=550.90.07" + std::string(1, '\0') +
                         "srcversion=C7943CB1D55185A98F0A163" + std::string(1, '\0') +
                         "vermagic=6.12.57+deb13-amd64 SMP preempt mod_unload" + std::string(1, '\0');

Bytes xz(const std::string& s) {
  Bytes out(s.size() + 1024);
  std::size_t pos = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, nullptr, reinterpret_cast<const std::uint8_t*>(s.data()),
                                    s.size(), out.data(), &pos, out.size()),
            LZMA_OK);
  out.resize(pos);
  return out;
}

Bytes zst(const std::string& s) {
  Bytes out(ZSTD_compressBound(s.size()));
  const std::size_t n = ZSTD_compress(out.data(), out.size(), s.data(), s.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

TEST(KoFile, PlainModuleIsItsOwnElf) {
  const auto elf = module_elf("/lib/modules/6.1.0-56-amd64/updates/dkms/nvidia.ko", bytes_of(kElf));
  ASSERT_TRUE(elf.ok()) << elf.error().message;
  EXPECT_EQ(*elf, bytes_of(kElf));
  EXPECT_EQ(modinfo_field(*elf, "srcversion"), "C7943CB1D55185A98F0A163");
}

TEST(KoFile, XzAndZstdModulesDecompress) {
  for (const auto& [name, packed] : {std::pair{std::string("nvidia.ko.xz"), xz(kElf)}, {"nvidia.ko.zst", zst(kElf)}}) {
    const auto elf = module_elf(name, packed);
    ASSERT_TRUE(elf.ok()) << name << ": " << elf.error().message;
    EXPECT_EQ(*elf, bytes_of(kElf)) << name;
    EXPECT_EQ(modinfo_field(*elf, "srcversion"), "C7943CB1D55185A98F0A163") << name;
  }
}

TEST(KoFile, VersionIsNotFoundInsideSrcversion) {
  const std::string only_src = std::string(1, '\0') + "srcversion=ABC" + std::string(1, '\0');
  EXPECT_EQ(modinfo_field(bytes_of(only_src), "version"), std::nullopt);
  EXPECT_EQ(modinfo_field(bytes_of(kElf), "version"), "550.90.07");
  EXPECT_EQ(modinfo_field(bytes_of(kElf), "license"), std::nullopt);
}

TEST(KoFile, CorruptTruncatedOrUnknownSaySoNamingTheFile) {
  auto bad = xz(kElf);
  bad[bad.size() / 2] ^= 0xff;
  const auto corrupt = module_elf("/x/nvidia.ko.xz", bad);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.error().message.find("/x/nvidia.ko.xz"), std::string::npos) << corrupt.error().message;
  auto cut = zst(kElf);
  cut.resize(cut.size() / 2);
  EXPECT_FALSE(module_elf("nvidia.ko.zst", cut).ok());
  const auto gz = module_elf("nvidia.ko.gz", bytes_of("x"));
  ASSERT_FALSE(gz.ok());
  EXPECT_NE(gz.error().message.find(".ko.zst"), std::string::npos) << gz.error().message;
}

TEST(KoFile, OverTheSizeLimitIsAnError) {
  const auto big = module_elf("nvidia.ko.xz", xz(std::string(1 << 20, 'a')), 4096);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("larger than 4096"), std::string::npos) << big.error().message;
  EXPECT_FALSE(module_elf("nvidia.ko.zst", zst(std::string(1 << 20, 'a')), 4096).ok());
}

}  // namespace
}  // namespace p2pnode::lifecycle
