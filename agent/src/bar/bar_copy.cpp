#include "p2pnode/agent/bar/bar_copy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace p2pnode::agent::bar {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::uint64_t mix64(std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 29;
  return x ^ (x >> 32);
}

unsigned char pattern_at(std::uint32_t seed, std::size_t offset) {
  return static_cast<unsigned char>(mix64(seed, offset / 8) >> (8 * (offset % 8)));
}

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
}  // namespace

void read_gdrdrv(Environment& env, const std::string& root) {
  const std::string node = root + "/dev/gdrdrv";
  const int fd = ::open(node.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    env.gdrdrv_node = true;
    ::close(fd);
  } else {
    env.gdrdrv_node = false;
    env.gdrdrv_detail = "/dev/gdrdrv: " + std::string(std::strerror(errno));
  }
  std::ifstream devices(root + "/proc/devices");
  std::string line;
  env.gdrdrv_loaded = false;
  while (std::getline(devices, line)) {
    const auto name = line.substr(std::min(line.find_first_not_of(" 0123456789"), line.size()));
    if (name == "gdrdrv") { env.gdrdrv_loaded = true; }
  }
}

std::string expected_backend(const Environment& env) {
  if (env.gdrdrv_node) { return "gdrdrv"; }
  if (env.driver_version >= kDmaBufMinDriverVersion && env.dma_buf_supported) { return "dma-buf"; }
  return {};
}

std::string no_backend_reason(const Environment& env) {
  if (!expected_backend(env).empty()) { return {}; }
  std::string gdrdrv = env.gdrdrv_detail.empty() ? "/dev/gdrdrv cannot be opened" : env.gdrdrv_detail;
  if (!env.gdrdrv_node && env.gdrdrv_loaded) { gdrdrv += ", although gdrdrv is loaded (see gdrcopy.device)"; }
  if (!env.gdrdrv_loaded) { gdrdrv += "; gdrdrv is not loaded"; }
  std::string dma;
  if (env.driver_version < kDmaBufMinDriverVersion) {
    dma = "the driver is CUDA " + cuda_version(env.driver_version) + ", and gdrcopy's dma-buf mapping needs " +
          cuda_version(kDmaBufMinDriverVersion) + " or later";
  } else {
    dma = "no GPU reports dma-buf support (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)";
  }
  return "neither gdrdrv (" + gdrdrv + ") nor the dma-buf backend (" + dma +
         "): install gdrdrv with the profile's gdrcopy section";
}

void fill_pattern(unsigned char* dst, std::size_t n, std::uint32_t seed, std::size_t base_offset) {
  for (std::size_t i = 0; i < n; ++i) { dst[i] = pattern_at(seed, base_offset + i); }
}

std::uint64_t count_bad(const unsigned char* got, std::size_t n, std::uint32_t seed, std::size_t base_offset,
                        std::uint64_t* first) {
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (got[i] != pattern_at(seed, base_offset + i)) {
      if (bad == 0 && first) { *first = i; }
      ++bad;
    }
  }
  return bad;
}

namespace {

// Per-call microseconds of `calls` copies, `buckets` times (copylat's buckets).
Summary per_call_us(int buckets, int calls, const std::function<void()>& one) {
  std::vector<double> us;
  one();  // first touch of the mapping outside the samples
  for (int b = 0; b < buckets; ++b) {
    const auto t0 = Clock::now();
    for (int c = 0; c < calls; ++c) { one(); }
    us.push_back(seconds_since(t0) * 1e6 / calls);
  }
  return summarize(us).value_or(Summary{});
}

// GB/s of whole-buffer copies: each sample repeats the copy until it lasts min_s.
Summary bandwidth(const Plan& plan, std::size_t bytes, const std::function<void()>& one) {
  const auto t0 = Clock::now();
  one();
  const double first = std::max(seconds_since(t0), 1e-9);
  const int reps = static_cast<int>(std::clamp(plan.min_sample_s / first, 1.0, 1000.0));
  std::vector<double> gbps;
  for (int i = 0; i < plan.iterations; ++i) {
    const auto t = Clock::now();
    for (int r = 0; r < reps; ++r) { one(); }
    gbps.push_back(static_cast<double>(bytes) * reps / seconds_since(t) / 1e9);
  }
  return summarize(gbps).value_or(Summary{});
}

IntegrityCheck check(std::string label, std::uint64_t checked, std::uint64_t bad, std::uint64_t first) {
  IntegrityCheck ic;
  ic.label = std::move(label);
  ic.checked_bytes = checked;
  ic.bad_bytes = bad;
  if (bad) { ic.first_bad_offset = first; }
  return ic;
}

// Counts bad bytes of [from, to) of `buf` against the pattern `seed` (offsets as in the buffer).
void tally(const std::vector<unsigned char>& buf, std::size_t from, std::size_t to, std::uint32_t seed,
           std::uint64_t& bad, std::uint64_t& first) {
  std::uint64_t f = 0;
  const std::uint64_t b = count_bad(buf.data() + from, to - from, seed, from, &f);
  if (b && !bad) { first = from + f; }
  bad += b;
}

std::vector<IntegrityCheck> integrity(const Window& w, const Reference& ref, std::uint32_t seed) {
  const std::size_t n = w.bytes;
  std::vector<IntegrityCheck> out;
  std::vector<unsigned char> host(n), back(n);
  const std::uint32_t s1 = seed * 4 + 1, s2 = seed * 4 + 2, poison = seed * 4 + 3;
  // CPU stores, the whole buffer over a poisoned one; read back by the copy engine.
  fill_pattern(host.data(), n, poison, 0);
  ref.upload(host.data());
  fill_pattern(host.data(), n, s1, 0);
  w.write(0, host.data(), n);
  ref.download(back.data());
  std::uint64_t bad = 0, first = 0;
  tally(back, 0, n, s1, bad, first);
  out.push_back(check("cpu_write/whole", n, bad, first));
  // CPU stores at an odd offset and length inside guards: the poison around them must stay.
  const std::size_t off = 4096 + 7, len = n - 8192 - 13;
  fill_pattern(host.data(), n, poison, 0);
  ref.upload(host.data());
  fill_pattern(host.data(), len, s2, off);
  w.write(off, host.data(), len);
  ref.download(back.data());
  bad = first = 0;
  tally(back, 0, off, poison, bad, first);
  tally(back, off, off + len, s2, bad, first);
  tally(back, off + len, n, poison, bad, first);
  out.push_back(check("cpu_write/partial_offset", n, bad, first));
  // CPU loads: the copy engine writes the pattern, the CPU reads it through the BAR.
  fill_pattern(host.data(), n, s1, 0);
  ref.upload(host.data());
  std::fill(back.begin(), back.end(), 0);
  w.read(back.data(), 0, n);
  bad = first = 0;
  tally(back, 0, n, s1, bad, first);
  out.push_back(check("cpu_read/whole", n, bad, first));
  // CPU loads at an odd offset and length: nothing past the length is written on the host.
  const std::size_t roff = 4096 + 3, rlen = n - 8192 - 5;
  std::fill(back.begin(), back.end(), 0xA5);
  w.read(back.data(), roff, rlen);
  std::uint64_t f = 0;
  bad = count_bad(back.data(), rlen, s1, roff, &f);
  first = f;
  for (std::size_t i = rlen; i < rlen + 64 && i < n; ++i) {
    if (back[i] != 0xA5 && bad++ == 0) { first = i; }
  }
  out.push_back(check("cpu_read/partial_offset", rlen + 64, bad, first));
  return out;
}

}  // namespace

Figures measure(const Window& w, const Reference& ref, const Plan& plan) {
  if (w.bytes < 64 * 1024) { throw std::invalid_argument("the BAR buffer must be at least 64 KiB"); }
  Figures f;
  std::vector<unsigned char> host(w.bytes);
  fill_pattern(host.data(), w.bytes, plan.seed, 0);
  for (std::size_t size : plan.latency_sizes) {
    if (size > w.bytes) { continue; }
    LatencyRow row;
    row.bytes = size;
    const int write_calls = static_cast<int>(std::clamp<std::size_t>(65536 / size, 1, 100));
    const int read_calls = static_cast<int>(std::clamp<std::size_t>(4096 / size, 1, 10));
    row.write_us = per_call_us(plan.latency_samples, write_calls, [&] { w.write(0, host.data(), size); });
    row.read_us = per_call_us(plan.latency_samples, read_calls, [&] { w.read(host.data(), 0, size); });
    f.latency.push_back(row);
  }
  f.write_gbps = bandwidth(plan, w.bytes, [&] { w.write(0, host.data(), w.bytes); });
  f.read_gbps = bandwidth(plan, w.bytes, [&] { w.read(host.data(), 0, w.bytes); });
  f.integrity = integrity(w, ref, plan.seed);
  return f;
}

Cell make_cell(int gpu, const Figures& f, const std::string& backend, const std::string& mapping_type,
               const std::string& library) {
  Cell c;
  c.src = gpu;
  c.measures.emplace_back("bar_write_bandwidth_gbps", f.write_gbps);
  c.measures.emplace_back("bar_read_bandwidth_gbps", f.read_gbps);
  c.integrity = f.integrity;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : f.latency) {
    rows.push_back({{"bytes", r.bytes},
                    {"write_us", {{"median", r.write_us.median}, {"min", r.write_us.min}}},
                    {"read_us", {{"median", r.read_us.median}, {"min", r.read_us.min}}}});
  }
  c.extra = {{"backend", backend}, {"mapping_type", mapping_type}, {"library", library}, {"bar_latency", rows}};
  for (const auto& ic : c.integrity) {
    if (ic.bad_bytes > 0 && c.status != Status::failed) {
      c.status = Status::failed;
      c.reason = "integrity: " + ic.label + ": " + std::to_string(ic.bad_bytes) + " bad bytes of " +
                 std::to_string(ic.checked_bytes) + ", first at offset " + std::to_string(*ic.first_bad_offset);
    }
  }
  return c;
}

}  // namespace p2pnode::agent::bar
