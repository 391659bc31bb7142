#pragma once
// The agent's engine room, shared by agent.cpp (set-up, timing, the run) and cases.cpp (the
// self-test cases): the GPUs, their buffers and streams, and the Agent that owns them.
//
// What it never does: change clocks, power, persistence or MIG; bind, unbind or reset a device;
// map or read any PCI BAR other than through the CUDA driver's own peer mappings of GPU memory
// (no NVMe BAR is ever touched); write to sysfs (it reads the GPU's link speed and width only).

#include <cuda_runtime.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels.hpp"
#include "p2pnode/agent/gpu_processes.hpp"
#include "p2pnode/agent/link.hpp"
#include "p2pnode/agent/nvme/doorbell_case.hpp"
#include "p2pnode/agent/options.hpp"
#include "p2pnode/agent/report.hpp"
#include "p2pnode/agent/schedule.hpp"
#include "p2pnode/agent/stats.hpp"

#ifndef P2PNODE_AGENT_VERSION
#define P2PNODE_AGENT_VERSION "0.0.0"
#endif

namespace p2pnode::agent {

using Clock = std::chrono::steady_clock;

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw CudaError(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
}
#define CK(expr) check((expr), #expr)

constexpr std::size_t kLatencyBytes = 2 * kMiB;
constexpr unsigned long long kSpinTimeoutNs = 10'000'000'000ULL;
constexpr std::size_t kInjectBytes = 64 * 1024;
constexpr std::size_t kLatencySlots = 1024;  // chase launches timed per sample (SMs of the GPU, at most)

inline std::uint32_t mix32(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0, std::uint64_t d = 0) {
  std::uint64_t x = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL ^
                    (c + 1) * 0x165667B19E3779F9ULL ^ (d + 7) * 0x27D4EB2F165667C5ULL;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 29;
  return static_cast<std::uint32_t>(x ^ (x >> 32));
}

inline std::size_t round_down(std::size_t v, std::size_t to) { return v / to * to; }

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string budget_reason(double budget_s);

struct Gpu {
  int index = 0;
  int ordinal = 0;
  cudaDeviceProp prop{};
  std::array<cudaStream_t, 1> stream{};
  char* buf_a = nullptr;  // source side of this GPU
  char* buf_b = nullptr;  // destination side of this GPU
  char* lat = nullptr;    // pointer chain for the latency case
  gpu::VerifyResult* verify = nullptr;
  unsigned long long* sink = nullptr;
  unsigned long long* lat_ns = nullptr;  // the latency chase's own times, one slot per launch
  std::string setup_error;
  bool released = false;  // its context was reset for the host phase (release_gpu)
};

struct PeerInfo {
  bool can_access = false;
  std::string error;  // enabling error, if any
  int performance_rank = -1;
  int native_atomics = -1;
};

// One queued operation that is timed with events: `warm` copies once before the first event,
// `timed` copies between each two events (one sample).
struct TimedOp {
  int gpu = 0;
  cudaStream_t stream = nullptr;
  std::function<void(cudaStream_t)> warm;
  std::function<void(cudaStream_t)> timed;
  std::vector<double> ms;  // one per sample
};

class Agent;

// Adds the wall time of its scope to *into (when into is set): the per-case timing split.
class Lap {
 public:
  explicit Lap(double* into) : into_(into), t0_(Clock::now()) {}
  ~Lap() {
    if (into_ != nullptr) { *into_ += std::chrono::duration<double>(Clock::now() - t0_).count(); }
  }
  Lap(const Lap&) = delete;
  Lap& operator=(const Lap&) = delete;

 private:
  double* into_;
  Clock::time_point t0_;
};

struct CaseDef {
  const char* key;
  const char* description;
  // Returns an empty string when the case can run, else why it is waived.
  std::string (*filter)(const Agent&);
  void (*run)(Agent&, CaseResult&);
  bool opt_in = false;  // runs only when --cases names it
};

class Agent {
 public:
  explicit Agent(Options o) : opt_(std::move(o)) {}
  ~Agent() { release(); }
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  int main(const std::vector<CaseDef>& cases);

  // --- used by the cases ---
  const Options& opt() const { return opt_; }
  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  bool peer_ok(int a, int b) const { return peers_[a][b].can_access; }
  const PeerInfo& peer(int a, int b) const { return peers_[a][b]; }
  Gpu& gpu(int i) { return gpus_[i]; }
  int gpu_ordinal(int i) const { return gpus_[i].ordinal; }
  const std::vector<Pair>& selected() const { return selected_; }
  std::size_t size() const { return size_; }
  std::size_t host_size() const { return host_size_; }
  std::size_t integrity_size() const { return integrity_size_; }
  char* host_buf() const { return host_buf_; }
  std::uint32_t seed() const { return seed_; }
  std::optional<Pair> inject() const { return inject_; }
  bool budget_spent() const {
    return opt_.time_budget_s > 0.0 && std::chrono::duration<double>(Clock::now() - t0_).count() > opt_.time_budget_s;
  }

  void set_device(int i) { CK(cudaSetDevice(gpus_[i].ordinal)); }
  void sync(int i) {
    const Lap lap(times_ ? &times_->sync_s : nullptr);
    set_device(i);
    CK(cudaStreamSynchronize(gpus_[i].stream[0]));
  }
  void fill(int i, void* buf, std::size_t bytes, std::uint32_t seed) {
    const Lap lap(times_ ? &times_->fill_s : nullptr);
    set_device(i);
    CK(gpu::launch_fill(buf, bytes, seed, gpus_[i].prop.multiProcessorCount, gpus_[i].stream[0]));
  }
  // Verifies on GPU i and waits for the answer.
  IntegrityCheck verify(int i, const gpu::VerifySpec& spec, std::string label) {
    const Lap lap(times_ ? &times_->verify_s : nullptr);
    set_device(i);
    CK(gpu::launch_verify(spec, gpus_[i].verify, gpus_[i].prop.multiProcessorCount, gpus_[i].stream[0]));
    gpu::VerifyResult r{};
    CK(cudaMemcpyAsync(&r, gpus_[i].verify, sizeof r, cudaMemcpyDeviceToHost, gpus_[i].stream[0]));
    CK(cudaStreamSynchronize(gpus_[i].stream[0]));
    IntegrityCheck ic;
    ic.label = std::move(label);
    ic.checked_bytes = spec.dst_bytes;
    ic.bad_bytes = r.bad_bytes;
    if (r.bad_bytes != 0) { ic.first_bad_offset = r.first_bad; }
    return ic;
  }

  // Queues, per op, the warm-up and then `samples` timed runs back to back, each between two
  // events; with hold, all ops wait behind one latch until everything is queued, so that enqueue
  // overhead stays out of the samples and the ops start together.
  void time_ops(std::vector<TimedOp>& ops, int samples, bool hold = true);

  // The host phase (host_device_bandwidth, the last case): the pinned host buffer must not add
  // to the peak of every context at once. begin_host_phase resets the last GPU's context (three
  // GPUs or more) and allocates the buffer; take_for_host_phase(i) gives GPU i its context back
  // where it was reset (its stream, buffers of host_size() and verify slot), resetting the
  // previous GPU's first, so one context fewer than in the pair cases lives beside the buffer.
  void begin_host_phase();
  void take_for_host_phase(int i);
  void acquire_gpu(int i);
  void release_gpu(int i);

  // Runs a per-GPU case: one cell per GPU (src = the GPU), filled by fn; waived once the time
  // budget is spent, failed with the error's text when fn throws.
  void run_gpu_cells(CaseResult& cr, const std::function<void(int gpu, Cell& cell)>& fn);

  // Runs a pair case step by step. fn(step_pairs, step_index) returns one cell per pair.
  void run_pair_steps(CaseResult& cr, const std::vector<Round>& steps, bool need_peer,
                      const std::function<std::vector<Cell>(const Round&, int)>& fn);

 private:
  // main's steps, in the order it takes them.
  bool find_gpus(Report& rep);
  std::string set_up_beside_nvml(Report& rep);
  void read_nvml(Report& rep);
  void choose_schedule(Report& rep);
  bool case_selected(const CaseDef& c) const;
  CaseResult run_case(const CaseDef& c);
  int emit_report(Report& rep);

  std::string setup();
  // setup's steps, in order.
  std::string take_run_settings();
  std::string set_up_gpus();
  void set_up_gpu(Gpu& g);
  void enable_all_peers();

  void release();
  void mark(const char* name);
  void enable_peers(int a);

  Options opt_;
  Clock::time_point t0_ = Clock::now();
  std::vector<Gpu> gpus_;
  std::unique_ptr<ProcessWatch> watch_;  // who else uses the GPUs, sampled around the cases
  std::vector<std::vector<PeerInfo>> peers_;
  std::vector<Pair> selected_;
  std::size_t size_ = 0;
  std::size_t host_size_ = 0;
  std::size_t integrity_size_ = 0;
  std::size_t buf_bytes_ = 0;
  char* host_buf_ = nullptr;
  int* latch_ = nullptr;  // [0] latch, [1] spin timed out
  std::uint32_t seed_ = 0;
  std::optional<Pair> inject_;
  std::vector<Phase> phases_;
  std::vector<GpuSetup> gpu_setup_;
  CaseTimings* times_ = nullptr;  // the running case's split, while a case runs
};

std::uint64_t current_rss_bytes();

// n copy-engine copies of the same bytes queued on s as one batch (cudaMemcpyBatchAsync: the copy
// engine streams from one copy into the next without the per-copy cost that separate calls pay,
// about 2 us each), or as n calls where the driver has no batches.
void copy_n(void* dst, const void* src, std::size_t bytes, int n, cudaStream_t s);
std::string uuid_string(const cudaUUID_t& u);     // GPU-8f3c…
std::string bdf_string(const cudaDeviceProp& p);  // 0000:18:00.0

// nvme_doorbell (nvme_doorbell.cpp): the host and GPU doorbell writers on drives bound to vfio-pci.
void run_nvme_doorbell(Agent& a, CaseResult& cr);

// bar_copy (bar_copy.cpp): CPU copies through gdrcopy's BAR mapping; waived without gdrdrv or dma-buf.
std::string bar_copy_filter(const Agent& a);
void run_bar_copy(Agent& a, CaseResult& cr);

// The one explicit list of cases, in the order they run (cases.cpp).
const std::vector<CaseDef>& case_list();

}  // namespace p2pnode::agent
