// The bar_copy case without CUDA: which gdrcopy backend a box offers (or why none), and the
// measurement over a GPU buffer the CPU sees through the BAR: latency of small copies and
// bandwidth each way, as gdrcopy's copylat and copybw measure them, and every byte checked
// against the same buffer read and written by the copy engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "p2pnode/agent/report.hpp"
#include "p2pnode/agent/stats.hpp"

namespace p2pnode::agent::bar {

inline constexpr const char* kCaseKey = "bar_copy";
// gdrcopy 2.6 maps through dma-buf (no gdrdrv) only on a driver of CUDA 13.3 or later.
inline constexpr int kDmaBufMinDriverVersion = 13030;

// What decides the backend, read before libgdrapi is asked.
struct Environment {
  bool gdrdrv_node = false;        // /dev/gdrdrv opens for reading and writing
  std::string gdrdrv_detail;       // why not: "/dev/gdrdrv: No such file or directory"
  bool gdrdrv_loaded = false;      // /proc/devices names gdrdrv
  int driver_version = 0;          // cudaDriverGetVersion: 13000 for CUDA 13.0
  bool dma_buf_supported = false;  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED on some GPU
};

// Reads the gdrdrv half of the environment under `root` ("/" on a box; a scratch root in tests).
void read_gdrdrv(Environment& env, const std::string& root);

// "gdrdrv" or "dma-buf", the backend gdrcopy 2.6's gdr_open takes (gdrdrv first), or empty.
std::string expected_backend(const Environment& env);
// Empty when a backend is there; else why neither is, with what would give one.
std::string no_backend_reason(const Environment& env);

// One GPU buffer as the CPU sees it through the BAR mapping.
struct Window {
  std::size_t bytes = 0;
  std::function<void(std::size_t offset, const void* src, std::size_t n)> write;  // CPU -> GPU
  std::function<void(void* dst, std::size_t offset, std::size_t n)> read;         // GPU -> CPU
};
// The same buffer through the copy engine (cudaMemcpy): the reference the BAR copies are checked against.
struct Reference {
  std::function<void(const void* src)> upload;  // the whole buffer
  std::function<void(void* dst)> download;
};

struct Plan {
  std::vector<std::size_t> latency_sizes = {4, 16, 64, 256, 1024, 4096, 16384, 65536};
  int latency_samples = 25;    // buckets per size; each is the mean of several calls
  int iterations = 3;          // bandwidth samples each way; the median is the figure
  double min_sample_s = 0.02;  // a bandwidth sample repeats the whole buffer until this long
  std::uint32_t seed = 1;
};

struct LatencyRow {
  std::size_t bytes = 0;
  Summary write_us, read_us;  // per call, as copylat: median and minimum of the buckets
};

struct Figures {
  Summary write_gbps, read_gbps;  // whole buffer, 1e9 bytes/s
  std::vector<LatencyRow> latency;
  std::vector<IntegrityCheck> integrity;
};

// Runs the measurement. Throws what the window or the reference throw.
Figures measure(const Window& w, const Reference& ref, const Plan& plan);

// The case's cell for one GPU: the two bandwidths (measures), the latency table and the backend
// (extra), failed on a bad byte or a mapping that is not write-combined.
Cell make_cell(int gpu, const Figures& f, const std::string& backend, const std::string& mapping_type,
               const std::string& library);

// The pattern the checks use: a byte per offset, derived from the seed and the offset.
void fill_pattern(unsigned char* dst, std::size_t n, std::uint32_t seed, std::size_t base_offset);
// Bytes of `got` that differ from the pattern; the first one's index in *first.
std::uint64_t count_bad(const unsigned char* got, std::size_t n, std::uint32_t seed, std::size_t base_offset,
                        std::uint64_t* first);

}  // namespace p2pnode::agent::bar
