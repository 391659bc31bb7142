// A stand-in for libgdrapi.so.2 with the entry points src/bar/gdrapi.cpp resolves, for the
// bar_copy case's host side without a GPU: "GPU memory" is host memory, a pin records the
// 64 KiB-aligned range around it and the mapping is that memory itself, as a write-combined
// mapping of BAR1 looks to the CPU. Knobs (environment, read at each call):
//   FAKE_GDRAPI_OPEN_FAIL=1         gdr_open returns NULL (no gdrdrv, no dma-buf)
//   FAKE_GDRAPI_DMA_BUF=1           gdr_get_attribute says the dma-buf backend is in use
//   FAKE_GDRAPI_FLIP_WRITE=OFFSET   copies to the mapping flip the byte at OFFSET of the mapping
//   FAKE_GDRAPI_PIN_FAIL=RC         gdr_pin_buffer returns RC
// The types as gdrapi.h 2.6 declares them.
#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" {
struct gdr {
  int pins;
};
typedef struct gdr* gdr_t;
typedef struct gdr_mh_s {
  unsigned long h;
} gdr_mh_t;
typedef struct gdr_info_v2 {
  uint64_t va;
  uint64_t mapped_size;
  uint32_t page_size;
  uint64_t tm_cycles;
  uint32_t cycles_per_ms;
  unsigned mapped : 1;
  unsigned wc_mapping : 1;
  int mapping_type;
} gdr_info_v2_t;

namespace {
constexpr uint64_t kPage = 64 * 1024;
struct Pin {
  uint64_t base = 0, bytes = 0;
  bool mapped = false;
} g_pin[8];
gdr g_gdr{0};

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 0) : fallback;
}
}  // namespace

gdr_t gdr_open() { return env_long("FAKE_GDRAPI_OPEN_FAIL", 0) ? nullptr : &g_gdr; }
int gdr_close(gdr_t) { return 0; }

int gdr_pin_buffer(gdr_t g, unsigned long addr, size_t size, uint64_t, uint32_t, gdr_mh_t* mh) {
  if (long rc = env_long("FAKE_GDRAPI_PIN_FAIL", 0)) { return static_cast<int>(rc); }
  for (unsigned long i = 0; i < 8; ++i) {
    if (g_pin[i].bytes) { continue; }
    const uint64_t base = addr & ~(kPage - 1);
    const uint64_t end = (addr + size + kPage - 1) & ~(kPage - 1);
    g_pin[i] = {base, end - base, false};
    mh->h = i;
    ++g->pins;
    return 0;
  }
  return 12;  // ENOMEM
}
int gdr_unpin_buffer(gdr_t g, gdr_mh_t mh) {
  if (mh.h >= 8 || !g_pin[mh.h].bytes) { return 22; }
  g_pin[mh.h] = {};
  --g->pins;
  return 0;
}
int gdr_get_info_v2(gdr_t, gdr_mh_t mh, gdr_info_v2_t* info) {
  const Pin& p = g_pin[mh.h];
  std::memset(info, 0, sizeof *info);
  info->va = p.base;
  info->mapped_size = p.bytes;
  info->page_size = kPage;
  info->mapped = p.mapped;
  info->wc_mapping = p.mapped;
  info->mapping_type = p.mapped ? 1 : 0;  // GDR_MAPPING_TYPE_WC
  return 0;
}
int gdr_map(gdr_t, gdr_mh_t mh, void** va, size_t size) {
  Pin& p = g_pin[mh.h];
  if (size > p.bytes) { return 22; }
  p.mapped = true;
  *va = reinterpret_cast<void*>(p.base);
  return 0;
}
int gdr_unmap(gdr_t, gdr_mh_t mh, void*, size_t) {
  g_pin[mh.h].mapped = false;
  return 0;
}
int gdr_copy_to_mapping(gdr_mh_t mh, void* dst, const void* src, size_t size) {
  std::memcpy(dst, src, size);
  const long flip = env_long("FAKE_GDRAPI_FLIP_WRITE", -1);
  const uint64_t at = g_pin[mh.h].base + static_cast<uint64_t>(flip);
  const auto d = reinterpret_cast<uint64_t>(dst);
  if (flip >= 0 && at >= d && at < d + size) { *reinterpret_cast<unsigned char*>(at) ^= 0x40; }
  return 0;
}
int gdr_copy_from_mapping(gdr_mh_t, void* dst, const void* src, size_t size) {
  std::memcpy(dst, src, size);
  return 0;
}
void gdr_runtime_get_version(int* major, int* minor) {
  *major = 2;
  *minor = 6;
}
int gdr_get_attribute(gdr_t, int attr, int* v) {
  if (attr != 3) { return 22; }
  *v = static_cast<int>(env_long("FAKE_GDRAPI_DMA_BUF", 0));
  return 0;
}
}
