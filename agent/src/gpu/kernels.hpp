// Device kernels of p2pnode-agent, behind plain host functions so that the runner is ordinary
// C++ compiled by the host compiler.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace p2pnode::agent::gpu {

struct VerifyResult {
  unsigned long long bad_bytes;
  unsigned long long first_bad;  // ~0ULL when none
};

// What a destination buffer must hold: bytes [region_off, region_off + region_len) are the
// source pattern (seed) starting at source byte src_off; every other byte of the buffer is the
// poison pattern (poison_seed) laid down before the copy.
struct VerifySpec {
  const void* dst = nullptr;
  std::size_t dst_bytes = 0;  // multiple of 16
  std::size_t region_off = 0;
  std::size_t region_len = 0;
  std::size_t src_off = 0;
  std::uint32_t seed = 0;
  std::uint32_t poison_seed = 0;
};

// The 32-bit word at word index `idx` of the pattern for `seed`: an address-derived hash mixed
// with the seed; never 0 and never a float32 NaN or infinity bit pattern.
std::uint32_t pattern_word_host(std::uint32_t seed, std::uint64_t idx);

// Holds the stream until *latch != 0 (or timeout_ns passes; then *timed_out = 1).
cudaError_t launch_spin(const volatile int* latch, int* timed_out, unsigned long long timeout_ns, cudaStream_t s);
// Fills `bytes` (multiple of 16) of buf with the pattern for seed.
cudaError_t launch_fill(void* buf, std::size_t bytes, std::uint32_t seed, int sm_count, cudaStream_t s);
// Checks every byte of spec.dst; result must be device memory, reset before by launch_verify itself.
cudaError_t launch_verify(const VerifySpec& spec, VerifyResult* result, int sm_count, cudaStream_t s);
// SM-driven copy of `bytes` (multiple of 16, both pointers 16-byte aligned), loads and stores
// through whichever mapping the pointers use (local or peer), `loops` times over in one launch.
cudaError_t launch_sm_copy(void* dst, const void* src, std::size_t bytes, int sm_count, cudaStream_t s, int loops = 1);
// Builds a pointer chain in buf (on its own GPU): node i (8 bytes) points to node (i + 16) mod n,
// one 128-byte line per hop, as nvbandwidth does.
cudaError_t launch_chain_init(void* buf, std::size_t bytes, cudaStream_t s);
// One thread, in block target_block of sm_count single-thread blocks, follows `accesses`
// pointers from start; the end pointer goes to *sink and, when ns is set, the chase's own time
// (global timer, nanoseconds) to *ns.
cudaError_t launch_chase(const void* start, int accesses, unsigned long long* sink, int sm_count, int target_block,
                         cudaStream_t s, unsigned long long* ns = nullptr);

// One thread stores `value` to the 32-bit word at `doorbell` (a device pointer to an NVMe BAR0
// page registered as I/O memory), then fences system-wide. A posted write: nothing is ever read
// from BAR0 (GPU reads of a peer BAR can time out on AMD root complexes and take the drive off
// the bus, seed 002).
cudaError_t launch_doorbell_write(std::uint32_t* doorbell, std::uint32_t value, cudaStream_t s);

}  // namespace p2pnode::agent::gpu
