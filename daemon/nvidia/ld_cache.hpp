#pragma once
// /etc/ld.so.cache, the table ldconfig writes and the dynamic loader reads before it searches any
// directory: soname -> path, with the ABI each entry is for. Pure decoders of the file's bytes and
// of `ldconfig -p`'s text (the same table, printed), so both are tested on recorded input.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace p2pnode::nvidia {

struct LdCacheEntry {
  std::string soname;  // libcuda.so.1
  std::string path;    // /usr/lib/x86_64-linux-gnu/libcuda.so.1
  std::uint32_t flags = 0;
  // A libc6 library for x86-64, the only kind the daemon's own loader would pick on this box.
  bool is_x86_64_libc6() const { return (flags & 0xff) == 3 && (flags & 0xff00) == 0x0300; }
};

// glibc's "glibc-ld.so.cache1.1" format, alone (glibc >= 2.32 writes only it) or after the old
// "ld.so-1.7.0" table. A truncated or foreign file is an error naming the offset and what was
// expected there. Little-endian only (the file records its byte order; x86-64 is the target).
Result<std::vector<LdCacheEntry>> parse_ld_so_cache(std::span<const std::uint8_t> bytes);

// `ldconfig -p` lines: "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1".
// Other lines (the "N libs found in cache" header) are skipped. flags is set for (libc6,x86-64)
// entries so that is_x86_64_libc6 says the same as for the file.
std::vector<LdCacheEntry> parse_ldconfig_p(std::string_view text);

}  // namespace p2pnode::nvidia
