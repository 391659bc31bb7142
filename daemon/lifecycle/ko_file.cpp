#include "lifecycle/ko_file.hpp"

#include <lzma.h>
#include <zstd.h>

namespace p2pnode::lifecycle {
namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

Result<std::vector<std::uint8_t>> unxz(std::span<const std::uint8_t> in, std::size_t max_size) {
  lzma_stream s = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
    return Error{"liblzma did not start a decoder"};
  }
  std::vector<std::uint8_t> out(std::min<std::size_t>(max_size, std::max<std::size_t>(in.size() * 4, 1 << 16)));
  s.next_in = in.data();
  s.avail_in = in.size();
  s.next_out = out.data();
  s.avail_out = out.size();
  lzma_ret rc = LZMA_OK;
  while (rc == LZMA_OK) {
    rc = lzma_code(&s, LZMA_FINISH);
    if (rc == LZMA_OK && s.avail_out == 0) {
      if (out.size() >= max_size) { break; }
      const std::size_t done = out.size();
      out.resize(std::min(max_size, done * 2));
      s.next_out = out.data() + done;
      s.avail_out = out.size() - done;
    }
  }
  const std::size_t total = out.size() - s.avail_out;
  lzma_end(&s);
  if (rc != LZMA_STREAM_END) {
    return Error{rc == LZMA_OK ? "larger than " + std::to_string(max_size) + " bytes uncompressed"
                               : "not a valid xz stream (liblzma error " + std::to_string(static_cast<int>(rc)) + ")"};
  }
  out.resize(total);
  return out;
}

Result<std::vector<std::uint8_t>> unzstd(std::span<const std::uint8_t> in, std::size_t max_size) {
  ZSTD_DStream* d = ZSTD_createDStream();
  if (!d) { return Error{"libzstd did not start a decoder"}; }
  std::vector<std::uint8_t> out;
  std::vector<std::uint8_t> chunk(ZSTD_DStreamOutSize());
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  std::size_t rc = 1;
  while (src.pos < src.size || rc != 0) {
    ZSTD_outBuffer dst{chunk.data(), chunk.size(), 0};
    const std::size_t before = src.pos;
    rc = ZSTD_decompressStream(d, &dst, &src);
    if (ZSTD_isError(rc)) {
      ZSTD_freeDStream(d);
      return Error{std::string("not a valid zstd stream (") + ZSTD_getErrorName(rc) + ")"};
    }
    out.insert(out.end(), chunk.data(), chunk.data() + dst.pos);
    if (out.size() > max_size) {
      ZSTD_freeDStream(d);
      return Error{"larger than " + std::to_string(max_size) + " bytes uncompressed"};
    }
    if (dst.pos == 0 && src.pos == before) {
      break;  // no progress: a truncated stream
    }
  }
  ZSTD_freeDStream(d);
  if (rc != 0) { return Error{"a truncated zstd stream"}; }
  return out;
}

}  // namespace

Result<std::vector<std::uint8_t>> module_elf(std::string_view path, std::span<const std::uint8_t> bytes,
                                             std::size_t max_size) {
  Result<std::vector<std::uint8_t>> r = Error{""};
  if (ends_with(path, ".ko")) { return std::vector<std::uint8_t>(bytes.begin(), bytes.end()); }
  if (ends_with(path, ".ko.xz")) {
    r = unxz(bytes, max_size);
  } else if (ends_with(path, ".ko.zst")) {
    r = unzstd(bytes, max_size);
  } else {
    r = Error{"not a .ko, .ko.xz or .ko.zst file name"};
  }
  return r.context("reading the kernel module " + std::string(path));
}

std::optional<std::string> modinfo_field(std::span<const std::uint8_t> elf, std::string_view field) {
  // .modinfo holds "key=value\0" strings: a key starts the data or follows a NUL (so that
  // "version=" is not found inside "srcversion=").
  const std::string_view v(reinterpret_cast<const char*>(elf.data()), elf.size());
  const std::string key = std::string(field) + "=";
  for (auto pos = v.find(key); pos != std::string_view::npos; pos = v.find(key, pos + 1)) {
    if (pos != 0 && v[pos - 1] != '\0') { continue; }
    const auto start = pos + key.size();
    const auto end = v.find('\0', start);
    if (end == std::string_view::npos) { return std::nullopt; }
    return std::string(v.substr(start, end - start));
  }
  return std::nullopt;
}

}  // namespace p2pnode::lifecycle
