#include "kernels.hpp"

namespace p2pnode::agent::gpu {
namespace {

__host__ __device__ __forceinline__ std::uint32_t pattern_word(std::uint32_t seed, std::uint64_t idx) {
  std::uint64_t x = idx * 0x9E3779B97F4A7C15ULL ^ ((static_cast<std::uint64_t>(seed) << 32) | (seed ^ 0xA5A5A5A5U));
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  x ^= x >> 33;
  std::uint32_t w = static_cast<std::uint32_t>(x);
  if (w == 0U) { w = 0x5A5A5A5AU; }
  if ((w & 0x7F800000U) == 0x7F800000U) {  // would read as float NaN/Inf
    w ^= 0x00800000U;
  }
  return w;
}

__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(const volatile int* latch, int* timed_out, unsigned long long timeout_ns) {
  const unsigned long long start = globaltimer_ns();
  while (*latch == 0) {
    if (globaltimer_ns() - start > timeout_ns) {
      *timed_out = 1;
      break;
    }
  }
}

__global__ void fill_kernel(uint4* buf, std::size_t n16, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += stride) {
    const std::uint64_t w = i * 4;
    buf[i] = make_uint4(pattern_word(seed, w), pattern_word(seed, w + 1), pattern_word(seed, w + 2),
                        pattern_word(seed, w + 3));
  }
}

__device__ __forceinline__ std::uint32_t expected_word(const VerifySpec& s, std::uint64_t w) {
  const std::uint64_t b0 = w * 4;
  const std::uint64_t r0 = s.region_off;
  const std::uint64_t r1 = s.region_off + s.region_len;
  if (b0 + 4 <= r0 || b0 >= r1) { return pattern_word(s.poison_seed, w); }
  if (b0 >= r0 && b0 + 4 <= r1 && ((s.src_off - s.region_off) & 3U) == 0) {
    return pattern_word(s.seed, (b0 - r0 + s.src_off) >> 2);
  }
  std::uint32_t v = 0;
  for (unsigned j = 0; j < 4; ++j) {
    const std::uint64_t b = b0 + j;
    std::uint32_t byte;
    if (b >= r0 && b < r1) {
      const std::uint64_t k = b - r0 + s.src_off;
      byte = (pattern_word(s.seed, k >> 2) >> (8U * static_cast<unsigned>(k & 3U))) & 0xFFU;
    } else {
      byte = (pattern_word(s.poison_seed, w) >> (8U * j)) & 0xFFU;
    }
    v |= byte << (8U * j);
  }
  return v;
}

__device__ __forceinline__ void check_word(std::uint32_t got, std::uint32_t want, std::uint64_t w,
                                           unsigned long long& bad, unsigned long long& first) {
  const std::uint32_t diff = got ^ want;
  if (diff != 0U) {
    unsigned n = 0;
    unsigned lowest = 4;
    for (unsigned j = 0; j < 4; ++j) {
      if (((diff >> (8U * j)) & 0xFFU) != 0U) {
        ++n;
        lowest = lowest < j ? lowest : j;
      }
    }
    bad += n;
    const unsigned long long off = w * 4 + lowest;
    first = first < off ? first : off;
  }
}

__global__ void verify_kernel(VerifySpec s, VerifyResult* out) {
  const uint4* p = static_cast<const uint4*>(s.dst);
  const std::size_t n16 = s.dst_bytes / 16;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  unsigned long long first = ~0ULL;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += stride) {
    const uint4 v = __ldcg(p + i);
    const std::uint64_t w = i * 4;
    check_word(v.x, expected_word(s, w), w, bad, first);
    check_word(v.y, expected_word(s, w + 1), w + 1, bad, first);
    check_word(v.z, expected_word(s, w + 2), w + 2, bad, first);
    check_word(v.w, expected_word(s, w + 3), w + 3, bad, first);
  }
  for (int o = 16; o > 0; o /= 2) {
    bad += __shfl_down_sync(0xFFFFFFFFU, bad, o);
    const unsigned long long f = __shfl_down_sync(0xFFFFFFFFU, first, o);
    first = first < f ? first : f;
  }
  if ((threadIdx.x & 31U) == 0 && bad != 0) {
    atomicAdd(&out->bad_bytes, bad);
    atomicMin(&out->first_bad, first);
  }
}

__global__ void reset_result_kernel(VerifyResult* out) {
  out->bad_bytes = 0;
  out->first_bad = ~0ULL;
}

// Each thread moves U 16-byte words per step, all U loads issued before the first store, over a
// grid-stride walk of the buffer; `loops` passes over the buffer in one launch, so a timed sample
// of several copies pays one launch ramp and one tail, not one per copy.
template <int U>
__global__ void __launch_bounds__(512)
    sm_copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t n16, int loops) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int l = 0; l < loops; ++l) {
    std::size_t i = first;
    for (; i + (U - 1) * stride < n16; i += U * stride) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) { v[u] = __ldcg(src + i + u * stride); }
#pragma unroll
      for (int u = 0; u < U; ++u) { __stcg(dst + i + u * stride, v[u]); }
    }
    for (; i < n16; i += stride) { __stcg(dst + i, __ldcg(src + i)); }
  }
}

struct Node {
  Node* next;
};

__global__ void chain_init_kernel(Node* nodes, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    nodes[i].next = &nodes[(i + 16) % n];
  }
}

// Launched with one single-thread block per SM; only block `target` chases, so that successive
// launches sample different SMs (as nvbandwidth does). The chasing thread times its own loads
// with the global nanosecond timer: launch and scheduling stay out of the figure.
__global__ void chase_kernel(const Node* start, int accesses, unsigned long long* sink, unsigned target,
                             unsigned long long* ns) {
  if (blockIdx.x != target) { return; }
  const Node* p = start;
  const unsigned long long t0 = globaltimer_ns();
  for (int i = 0; i < accesses; ++i) { p = p->next; }
  // A branch on the last pointer waits for the last load, so the timer is read after it lands
  // (a plain read could issue while that load is still in flight).
  if (p == nullptr) { __trap(); }
  const unsigned long long t1 = globaltimer_ns();
  *sink = reinterpret_cast<unsigned long long>(p);
  if (ns != nullptr) { *ns = t1 - t0; }
}

unsigned grid_for(std::size_t n, int sm_count, int per_sm) {
  const std::size_t want = (n + 511) / 512;
  const std::size_t cap = static_cast<std::size_t>(sm_count > 0 ? sm_count : 1) * static_cast<std::size_t>(per_sm);
  const std::size_t g = want < cap ? want : cap;
  return static_cast<unsigned>(g > 0 ? g : 1);
}

}  // namespace

std::uint32_t pattern_word_host(std::uint32_t seed, std::uint64_t idx) { return pattern_word(seed, idx); }

cudaError_t launch_spin(const volatile int* latch, int* timed_out, unsigned long long timeout_ns, cudaStream_t s) {
  spin_kernel<<<1, 1, 0, s>>>(latch, timed_out, timeout_ns);
  return cudaGetLastError();
}

cudaError_t launch_fill(void* buf, std::size_t bytes, std::uint32_t seed, int sm_count, cudaStream_t s) {
  const std::size_t n16 = bytes / 16;
  fill_kernel<<<grid_for(n16, sm_count, 4), 512, 0, s>>>(static_cast<uint4*>(buf), n16, seed);
  return cudaGetLastError();
}

cudaError_t launch_verify(const VerifySpec& spec, VerifyResult* result, int sm_count, cudaStream_t s) {
  reset_result_kernel<<<1, 1, 0, s>>>(result);
  verify_kernel<<<grid_for(spec.dst_bytes / 16, sm_count, 4), 512, 0, s>>>(spec, result);
  return cudaGetLastError();
}

cudaError_t launch_sm_copy(void* dst, const void* src, std::size_t bytes, int sm_count, cudaStream_t s, int loops) {
  // Four blocks of 512 threads per SM (full occupancy on Hopper and Ampere), four 16-byte words
  // in flight per thread: measured on 4x H100 against 2x4, 1x12 (nvbandwidth's shape) and 2x8,
  // the fastest to ramp up, so the least lost per launch (tests/gpu/bench-4gpu.sh; figures in docs/benchmarks.md).
  // GPUs with fewer threads per SM (1536 on sm_86/sm_89) get as many blocks as fit at once, so
  // that no block waits for a second wave.
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sm_copy_kernel<4>, 512, 0) != cudaSuccess || per_sm < 1) {
    cudaGetLastError();
    per_sm = 1;
  }
  const std::size_t n16 = bytes / 16;
  sm_copy_kernel<4><<<grid_for(n16, sm_count, per_sm < 4 ? per_sm : 4), 512, 0, s>>>(
      static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16, loops);
  return cudaGetLastError();
}

cudaError_t launch_chain_init(void* buf, std::size_t bytes, cudaStream_t s) {
  const std::size_t n = bytes / sizeof(Node);
  chain_init_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(static_cast<Node*>(buf), n);
  return cudaGetLastError();
}

cudaError_t launch_chase(const void* start, int accesses, unsigned long long* sink, int sm_count, int target_block,
                         cudaStream_t s, unsigned long long* ns) {
  const unsigned blocks = static_cast<unsigned>(sm_count > 0 ? sm_count : 1);
  chase_kernel<<<blocks, 1, 0, s>>>(static_cast<const Node*>(start), accesses, sink,
                                    static_cast<unsigned>(target_block) % blocks, ns);
  return cudaGetLastError();
}

__global__ void doorbell_write_kernel(volatile std::uint32_t* doorbell, std::uint32_t value) {
  *doorbell = value;  // st.volatile.sys: one posted MemWr TLP to the drive's BAR0
  __threadfence_system();
}

cudaError_t launch_doorbell_write(std::uint32_t* doorbell, std::uint32_t value, cudaStream_t s) {
  doorbell_write_kernel<<<1, 1, 0, s>>>(doorbell, value);
  return cudaGetLastError();
}

}  // namespace p2pnode::agent::gpu
