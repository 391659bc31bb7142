// libgdrapi (gdrcopy's user-space library) opened at run time: the agent runs on boxes without
// gdrcopy, so it never links it. The types are declared here as gdrapi.h 2.x declares them (the
// ABI has been stable since 2.0); only the entry points the BAR case uses are resolved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace p2pnode::agent::bar {

// gdrapi.h's types.
using GdrHandle = struct gdr*;
struct GdrMemHandle {
  unsigned long h = 0;
};
struct GdrInfo {  // gdr_info_v2_t
  std::uint64_t va = 0;
  std::uint64_t mapped_size = 0;
  std::uint32_t page_size = 0;
  std::uint64_t tm_cycles = 0;
  std::uint32_t cycles_per_ms = 0;
  unsigned mapped : 1;
  unsigned wc_mapping : 1;
  int mapping_type = 0;  // gdr_mapping_type_t: 0 none, 1 WC, 2 caching, 3 device
};
inline constexpr int kGdrAttrUsingDmaBufMmap = 3;        // GDR_ATTR_USING_DMA_BUF_MMAP (2.6)
inline constexpr std::size_t kGpuPageBytes = 64 * 1024;  // GPU_PAGE_SIZE: pins and maps are in these

const char* mapping_type_name(int t);  // "none", "wc", "caching", "device", "unknown"

// The library's default names, in the order they are tried: the soname a gdrcopy install
// registers with ldconfig, then the bare name of a development install.
const std::vector<std::string>& default_library_names();

class GdrApi {
 public:
  GdrApi() = default;
  GdrApi(const GdrApi&) = delete;
  GdrApi& operator=(const GdrApi&) = delete;
  ~GdrApi();

  // dlopen the first of `names` that opens and resolve the entry points: empty, or why not
  // ("libgdrapi.so.2: cannot open shared object file …" for each name tried).
  std::string open(const std::vector<std::string>& names);
  const std::string& path() const { return path_; }  // the name that opened
  std::string version() const;                       // "2.6", from gdr_runtime_get_version

  GdrHandle (*gdr_open)() = nullptr;
  int (*gdr_close)(GdrHandle) = nullptr;
  int (*gdr_pin_buffer)(GdrHandle, unsigned long, std::size_t, std::uint64_t, std::uint32_t, GdrMemHandle*) = nullptr;
  int (*gdr_unpin_buffer)(GdrHandle, GdrMemHandle) = nullptr;
  int (*gdr_get_info)(GdrHandle, GdrMemHandle, GdrInfo*) = nullptr;
  int (*gdr_map)(GdrHandle, GdrMemHandle, void**, std::size_t) = nullptr;
  int (*gdr_unmap)(GdrHandle, GdrMemHandle, void*, std::size_t) = nullptr;
  int (*gdr_copy_to_mapping)(GdrMemHandle, void*, const void*, std::size_t) = nullptr;
  int (*gdr_copy_from_mapping)(GdrMemHandle, void*, const void*, std::size_t) = nullptr;
  void (*gdr_runtime_get_version)(int*, int*) = nullptr;
  int (*gdr_get_attribute)(GdrHandle, int, int*) = nullptr;  // 2.5+; null before

 private:
  void* lib_ = nullptr;
  std::string path_;
};

// One GPU buffer pinned and mapped for the CPU through gdrcopy; undone in reverse order.
class Mapping {
 public:
  Mapping(const GdrApi& api, GdrHandle g) : api_(api), g_(g) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  // Pins [device_address, +bytes) (64 KiB aligned) and maps it: empty, or what failed and its
  // return code ("gdr_pin_buffer of 8388608 bytes at 0x7f0000000000 returned 22 (…)").
  std::string map(std::uint64_t device_address, std::size_t bytes);
  char* cpu() const { return cpu_ + offset_; }  // the CPU's view of device_address
  const GdrInfo& info() const { return info_; }
  GdrMemHandle handle() const { return mh_; }

 private:
  const GdrApi& api_;
  GdrHandle g_;
  GdrMemHandle mh_{};
  bool pinned_ = false;
  void* map_ = nullptr;
  char* cpu_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::size_t offset_ = 0;
  GdrInfo info_{};
};

}  // namespace p2pnode::agent::bar
