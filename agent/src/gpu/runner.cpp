// p2pnode-agent: runs the peer-to-peer self-tests on every visible GPU and prints one JSON
// document (or tables). Host C++ over the CUDA runtime; the kernels are in kernels.cu.
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
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels.hpp"
#include "p2pnode/agent/link.hpp"
#include "p2pnode/agent/options.hpp"
#include "p2pnode/agent/report.hpp"
#include "p2pnode/agent/schedule.hpp"
#include "p2pnode/agent/stats.hpp"

#ifndef P2PNODE_AGENT_VERSION
#define P2PNODE_AGENT_VERSION "0.0.0"
#endif

namespace p2pnode::agent {
namespace {

using Clock = std::chrono::steady_clock;

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw CudaError(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
}
#define CK(expr) check((expr), #expr)

constexpr std::size_t kLatencyBytes = 2 * kMiB;
constexpr unsigned long long kSpinTimeoutNs = 10'000'000'000ULL;
constexpr std::size_t kInjectBytes = 64 * 1024;

std::uint32_t mix32(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0, std::uint64_t d = 0) {
  std::uint64_t x = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL ^
                    (c + 1) * 0x165667B19E3779F9ULL ^ (d + 7) * 0x27D4EB2F165667C5ULL;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 29;
  return static_cast<std::uint32_t>(x ^ (x >> 32));
}

std::size_t round_down(std::size_t v, std::size_t to) { return v / to * to; }

std::string budget_reason(double budget_s) {
  std::ostringstream ss;
  ss << "time budget of " << budget_s << " s spent";
  return ss.str();
}

struct Gpu {
  int index = 0;
  int ordinal = 0;
  cudaDeviceProp prop{};
  std::array<cudaStream_t, 2> stream{};
  char* buf_a = nullptr;  // source side of this GPU
  char* buf_b = nullptr;  // destination side of this GPU
  char* lat = nullptr;    // pointer chain for the latency case
  gpu::VerifyResult* verify = nullptr;
  unsigned long long* sink = nullptr;
  std::string setup_error;
};

struct PeerInfo {
  bool can_access = false;
  std::string error;  // enabling error, if any
  int performance_rank = -1;
  int native_atomics = -1;
};

// One queued operation that is timed with events: `warm` copies before the start event,
// `timed` copies between the events.
struct TimedOp {
  int gpu = 0;
  cudaStream_t stream = nullptr;
  std::function<void(cudaStream_t)> warm;
  std::function<void(cudaStream_t)> timed;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  std::vector<double> ms;  // one per sample
};

class Agent;

struct CaseDef {
  const char* key;
  const char* description;
  // Returns an empty string when the case can run, else why it is waived.
  std::string (*filter)(const Agent&);
  void (*run)(Agent&, CaseResult&);
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
  const std::vector<Pair>& selected() const { return selected_; }
  std::size_t size() const { return size_; }
  std::size_t host_size() const { return host_size_; }
  std::size_t integrity_size() const { return integrity_size_; }
  char* host_buf() const { return host_buf_; }
  std::uint32_t seed() const { return seed_; }
  std::optional<Pair> inject() const { return inject_; }
  bool budget_spent() const {
    return opt_.time_budget_s > 0.0 &&
           std::chrono::duration<double>(Clock::now() - t0_).count() > opt_.time_budget_s;
  }

  void set_device(int i) { CK(cudaSetDevice(gpus_[i].ordinal)); }
  void sync(int i) {
    set_device(i);
    CK(cudaStreamSynchronize(gpus_[i].stream[0]));
    CK(cudaStreamSynchronize(gpus_[i].stream[1]));
  }
  void fill(int i, void* buf, std::size_t bytes, std::uint32_t seed) {
    set_device(i);
    CK(gpu::launch_fill(buf, bytes, seed, gpus_[i].prop.multiProcessorCount, gpus_[i].stream[0]));
  }
  // Verifies on GPU i and waits for the answer.
  IntegrityCheck verify(int i, const gpu::VerifySpec& spec, std::string label) {
    set_device(i);
    CK(gpu::launch_verify(spec, gpus_[i].verify, gpus_[i].prop.multiProcessorCount, gpus_[i].stream[0]));
    gpu::VerifyResult r{};
    CK(cudaMemcpyAsync(&r, gpus_[i].verify, sizeof r, cudaMemcpyDeviceToHost, gpus_[i].stream[0]));
    CK(cudaStreamSynchronize(gpus_[i].stream[0]));
    IntegrityCheck ic;
    ic.label = std::move(label);
    ic.checked_bytes = spec.dst_bytes;
    ic.bad_bytes = r.bad_bytes;
    if (r.bad_bytes != 0) {
      ic.first_bad_offset = r.first_bad;
    }
    return ic;
  }

  // Runs the ops `iterations` times, all held behind one latch so that they start together.
  void time_ops(std::vector<TimedOp>& ops, int iterations);

  // Runs a pair case step by step. fn(step_pairs, step_index) returns one cell per pair.
  void run_pair_steps(CaseResult& cr, const std::vector<Round>& steps, bool need_peer,
                      const std::function<std::vector<Cell>(const Round&, int)>& fn);

 private:
  std::string setup();
  void release();
  void mark(const char* name);

  Options opt_;
  Clock::time_point t0_ = Clock::now();
  std::vector<Gpu> gpus_;
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
};

std::uint64_t current_rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) {
    return 0;
  }
  unsigned long long pages_total = 0;
  unsigned long long pages_resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &pages_total, &pages_resident);
  std::fclose(f);
  return got == 2 ? pages_resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

void Agent::mark(const char* name) {
  phases_.push_back({name, std::chrono::duration<double>(Clock::now() - t0_).count(), current_rss_bytes()});
}

// ---------------------------------------------------------------------------------------------

void Agent::time_ops(std::vector<TimedOp>& ops, int iterations) {
  for (auto& op : ops) {
    set_device(op.gpu);
    if (op.start == nullptr) {
      CK(cudaEventCreate(&op.start));
      CK(cudaEventCreate(&op.stop));
    }
  }
  struct Release {
    int* latch;
    std::vector<TimedOp>& ops;
    Agent& agent;
    bool armed = true;
    ~Release() {
      if (armed) {  // an enqueue failed: let the held streams go before unwinding
        __atomic_store_n(&latch[0], 1, __ATOMIC_SEQ_CST);
        for (auto& op : ops) {
          cudaSetDevice(agent.gpu(op.gpu).ordinal);
          cudaStreamSynchronize(op.stream);
        }
      }
    }
  };
  for (int it = 0; it < iterations; ++it) {
    __atomic_store_n(&latch_[0], 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&latch_[1], 0, __ATOMIC_SEQ_CST);
    Release guard{latch_, ops, *this};
    for (auto& op : ops) {
      set_device(op.gpu);
      if (!opt_.no_hold) {
        CK(gpu::launch_spin(latch_, &latch_[1], kSpinTimeoutNs, op.stream));
      }
      op.warm(op.stream);
      CK(cudaEventRecord(op.start, op.stream));
      op.timed(op.stream);
      CK(cudaEventRecord(op.stop, op.stream));
    }
    guard.armed = false;
    __atomic_store_n(&latch_[0], 1, __ATOMIC_SEQ_CST);
    for (auto& op : ops) {
      set_device(op.gpu);
      CK(cudaStreamSynchronize(op.stream));
    }
    if (__atomic_load_n(&latch_[1], __ATOMIC_SEQ_CST) != 0) {
      throw CudaError("spin kernel timed out: enqueueing the timed copies took longer than 10 s");
    }
    for (auto& op : ops) {
      float ms = 0.0F;
      CK(cudaEventElapsedTime(&ms, op.start, op.stop));
      op.ms.push_back(static_cast<double>(ms));
    }
  }
  for (auto& op : ops) {
    set_device(op.gpu);
    cudaEventDestroy(op.start);
    cudaEventDestroy(op.stop);
    op.start = op.stop = nullptr;
  }
}

void Agent::run_pair_steps(CaseResult& cr, const std::vector<Round>& steps, bool need_peer,
                           const std::function<std::vector<Cell>(const Round&, int)>& fn) {
  int step_index = 0;
  for (const auto& step : steps) {
    Round active;
    for (const auto& p : step) {
      Cell waived;
      waived.src = p.src;
      waived.dst = p.dst;
      waived.status = Status::waived;
      if (need_peer && (!peer_ok(p.src, p.dst) || !peer_ok(p.dst, p.src))) {
        waived.reason = "no peer access between GPU " + std::to_string(p.src) + " and GPU " + std::to_string(p.dst) +
                        " (see peer_access)";
        cr.cells.push_back(waived);
      } else if (budget_spent()) {
        waived.reason = budget_reason(opt_.time_budget_s);
        cr.cells.push_back(waived);
      } else {
        active.push_back(p);
      }
    }
    if (active.empty()) {
      continue;
    }
    try {
      auto cells = fn(active, step_index);
      for (auto& c : cells) {
        c.step = step_index;
        c.concurrent_pairs = static_cast<int>(active.size());
        cr.cells.push_back(std::move(c));
      }
    } catch (const std::exception& e) {
      for (const auto& p : active) {
        Cell c;
        c.src = p.src;
        c.dst = p.dst;
        c.status = Status::failed;
        c.reason = e.what();
        c.step = step_index;
        c.concurrent_pairs = static_cast<int>(active.size());
        cr.cells.push_back(std::move(c));
      }
      // Clear a non-sticky error so that later pairs can run.
      cudaGetLastError();
    }
    ++step_index;
  }
  cr.steps = step_index;
}

std::string uuid_string(const cudaUUID_t& u) {
  char out[64];
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::snprintf(out, sizeof out, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

std::string bdf_string(const cudaDeviceProp& p) {
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.0", static_cast<unsigned>(p.pciDomainID),
                static_cast<unsigned>(p.pciBusID), static_cast<unsigned>(p.pciDeviceID));
  return out;
}

std::string Agent::setup() {
  size_ = std::max<std::size_t>(round_down(opt_.size_bytes, 4096), 4096);
  host_size_ = std::max<std::size_t>(round_down(opt_.host_size_bytes, 4096), 4096);
  integrity_size_ = std::max<std::size_t>(round_down(opt_.integrity_size_bytes, 4096), 64 * 1024);
  buf_bytes_ = std::max({size_, host_size_, integrity_size_});
  seed_ = opt_.seed ? static_cast<std::uint32_t>(*opt_.seed) : static_cast<std::uint32_t>(std::random_device{}());

  const int n = gpu_count();
  std::string err;
  if (auto sel = parse_pairs(opt_.pairs, n, &err)) {
    selected_ = *sel;
  } else {
    return "--pairs: " + err;
  }
  if (opt_.inject_corruption) {
    auto p = parse_pairs(*opt_.inject_corruption, n, &err);
    if (!p) {
      return "--inject-corruption: " + err;
    }
    inject_ = p->front();
  }

  // Contexts, streams and buffers, one thread per GPU (context creation dominates start-up).
  std::vector<std::thread> threads;
  for (auto& g : gpus_) {
    threads.emplace_back([this, &g] {
      try {
        CK(cudaSetDevice(g.ordinal));
        CK(cudaFree(nullptr));
        for (auto& s : g.stream) {
          CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        }
        CK(cudaMalloc(reinterpret_cast<void**>(&g.buf_a), buf_bytes_));
        CK(cudaMalloc(reinterpret_cast<void**>(&g.buf_b), buf_bytes_));
        CK(cudaMalloc(reinterpret_cast<void**>(&g.lat), kLatencyBytes));
        CK(cudaMalloc(reinterpret_cast<void**>(&g.verify), sizeof(gpu::VerifyResult)));
        CK(cudaMalloc(reinterpret_cast<void**>(&g.sink), sizeof(unsigned long long)));
        CK(gpu::launch_chain_init(g.lat, kLatencyBytes, g.stream[0]));
        CK(cudaStreamSynchronize(g.stream[0]));
      } catch (const std::exception& e) {
        g.setup_error = e.what();
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const auto& g : gpus_) {
    if (!g.setup_error.empty()) {
      return "GPU " + std::to_string(g.index) + ": " + g.setup_error;
    }
  }
  mark("contexts_and_buffers");
  CK(cudaSetDevice(gpus_[0].ordinal));
  CK(cudaHostAlloc(reinterpret_cast<void**>(&latch_), 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  CK(cudaHostAlloc(reinterpret_cast<void**>(&host_buf_), host_size_, cudaHostAllocPortable));

  mark("host_buffers");
  // Peer access, every ordered pair; one thread per accessing GPU (enabling maps the peer's
  // memory into the GPU's page tables, which takes a while per pair).
  peers_.assign(n, std::vector<PeerInfo>(n));
  std::vector<std::thread> peer_threads;
  for (int a = 0; a < n; ++a) {
    peer_threads.emplace_back([this, a, n] {
      if (cudaSetDevice(gpus_[a].ordinal) != cudaSuccess) {
        return;
      }
      for (int b = 0; b < n; ++b) {
        if (a == b) {
          continue;
        }
        PeerInfo& pi = peers_[a][b];
        int can = 0;
        const cudaError_t e = cudaDeviceCanAccessPeer(&can, gpus_[a].ordinal, gpus_[b].ordinal);
        if (e != cudaSuccess) {
          pi.error = std::string("cudaDeviceCanAccessPeer: ") + cudaGetErrorName(e);
          continue;
        }
        int rank = -1;
        int atomics = -1;
        if (cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, gpus_[a].ordinal, gpus_[b].ordinal) ==
            cudaSuccess) {
          pi.performance_rank = rank;
        }
        if (cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, gpus_[a].ordinal,
                                      gpus_[b].ordinal) == cudaSuccess) {
          pi.native_atomics = atomics;
        }
        if (can == 0) {
          pi.error = "cudaDeviceCanAccessPeer reports no peer access";
          continue;
        }
        const cudaError_t en = cudaDeviceEnablePeerAccess(gpus_[b].ordinal, 0);
        if (en != cudaSuccess && en != cudaErrorPeerAccessAlreadyEnabled) {
          pi.error = std::string("cudaDeviceEnablePeerAccess: ") + cudaGetErrorName(en) + " (" +
                     cudaGetErrorString(en) + ")";
          cudaGetLastError();
          continue;
        }
        cudaGetLastError();
        pi.can_access = true;
      }
    });
  }
  for (auto& t : peer_threads) {
    t.join();
  }
  mark("peer_access_enabled");
  return {};
}

void Agent::release() {
  for (auto& g : gpus_) {
    if (cudaSetDevice(g.ordinal) != cudaSuccess) {
      continue;
    }
    cudaDeviceSynchronize();
    cudaFree(g.buf_a);
    cudaFree(g.buf_b);
    cudaFree(g.lat);
    cudaFree(g.verify);
    cudaFree(g.sink);
    for (auto& s : g.stream) {
      if (s != nullptr) {
        cudaStreamDestroy(s);
      }
    }
    g = Gpu{};
  }
  if (latch_ != nullptr) {
    cudaFreeHost(latch_);
    latch_ = nullptr;
  }
  if (host_buf_ != nullptr) {
    cudaFreeHost(host_buf_);
    host_buf_ = nullptr;
  }
}

std::uint64_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::uint64_t>(ru.ru_maxrss) * 1024ULL;
}

int Agent::main(const std::vector<CaseDef>& cases) {
  Report rep;
  rep.agent_version = P2PNODE_AGENT_VERSION;
  rep.started_at = rfc3339_utc(std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
  rep.mode = opt_.mode;
  rep.iterations = opt_.iterations;
  rep.copies = opt_.copies;
  rep.warmup = opt_.warmup;
  rep.latency_accesses = opt_.latency_accesses;
  rep.latency_sms = opt_.latency_sms;
  rep.time_budget_s = opt_.time_budget_s;
  rep.inject_corruption = opt_.inject_corruption;
  for (const char* var : {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_MODULE_LOADING"}) {
    if (const char* v = std::getenv(var)) {
      rep.environment.emplace_back(var, v);
    }
  }

  auto emit = [&]() {
    rep.duration_s = std::chrono::duration<double>(Clock::now() - t0_).count();
    rep.peak_rss_bytes = peak_rss_bytes();
    rep.phases = phases_;
    finalize(rep);
    if (opt_.format == Format::table) {
      std::cout << render_table(rep);
    } else {
      std::cout << to_json(rep).dump(1) << "\n";
    }
    std::cout.flush();
    return rep.exit_code;
  };

  mark("start");
  int count = 0;
  const cudaError_t ce = cudaGetDeviceCount(&count);
  mark("driver_initialized");
  cudaDriverGetVersion(&rep.driver_version);
  cudaRuntimeGetVersion(&rep.runtime_version);
  if (ce != cudaSuccess || count == 0) {
    rep.error = ce != cudaSuccess ? std::string("no usable GPU or driver: ") + cudaGetErrorName(ce) + " (" +
                                        cudaGetErrorString(ce) + ")"
                                  : std::string("no GPU found");
    return emit();
  }
  for (int i = 0; i < count; ++i) {
    Gpu g;
    g.index = i;
    g.ordinal = i;
    if (cudaGetDeviceProperties(&g.prop, i) != cudaSuccess) {
      rep.error = "cudaGetDeviceProperties failed for device " + std::to_string(i);
      return emit();
    }
    DeviceInfo d;
    d.index = i;
    d.cuda_ordinal = i;
    d.name = g.prop.name;
    d.uuid = uuid_string(g.prop.uuid);
    d.pci_bus_id = bdf_string(g.prop);
    d.memory_bytes = g.prop.totalGlobalMem;
    d.compute_capability_major = g.prop.major;
    d.compute_capability_minor = g.prop.minor;
    d.multiprocessor_count = g.prop.multiProcessorCount;
    d.pcie_link = read_link_info("/sys", d.pci_bus_id);
    rep.devices.push_back(std::move(d));
    gpus_.push_back(std::move(g));
  }
  try {
    const std::string err = setup();
    if (!err.empty()) {
      rep.error = err;
      rep.seed = seed_;
      return emit();
    }
  } catch (const std::exception& e) {
    rep.error = std::string("setup: ") + e.what();
    return emit();
  }
  rep.seed = seed_;
  rep.setup_s = std::chrono::duration<double>(Clock::now() - t0_).count();
  rep.size_bytes = size_;
  rep.host_size_bytes = host_size_;
  rep.integrity_size_bytes = integrity_size_;
  if (opt_.mode == Mode::rounds) {
    rep.rounds = filter_rounds(circle_rounds(gpu_count()), [&](int a, int b) {
      return std::find(selected_.begin(), selected_.end(), Pair{a, b}) != selected_.end();
    });
  }

  for (const auto& c : cases) {
    if (!opt_.cases.empty() && std::find(opt_.cases.begin(), opt_.cases.end(), c.key) == opt_.cases.end()) {
      continue;
    }
    CaseResult cr;
    cr.key = c.key;
    cr.description = c.description;
    const auto t = Clock::now();
    std::string why = c.filter(*this);
    if (why.empty() && budget_spent()) {
      why = budget_reason(opt_.time_budget_s);
    }
    if (!why.empty()) {
      cr.status = Status::waived;
      cr.reason = why;
    } else {
      try {
        c.run(*this, cr);
      } catch (const std::exception& e) {
        cr.status = Status::failed;
        cr.reason = e.what();
        cudaGetLastError();
      }
    }
    cr.duration_s = std::chrono::duration<double>(Clock::now() - t).count();
    rep.cases.push_back(std::move(cr));
    mark(("after_" + std::string(c.key)).c_str());
  }
  release();
  mark("released");
  return emit();
}

// --------------------------------------------------------------------------------- cases ----

std::string need_two_gpus(const Agent& a) {
  if (a.gpu_count() < 2) {
    return "needs at least 2 GPUs, found " + std::to_string(a.gpu_count());
  }
  return {};
}

std::string need_peer_pair(const Agent& a) {
  if (auto why = need_two_gpus(a); !why.empty()) {
    return why;
  }
  for (const auto& p : a.selected()) {
    if (a.peer_ok(p.src, p.dst)) {
      return {};
    }
  }
  return "no selected pair has peer access (see peer_access)";
}

std::string always(const Agent&) { return {}; }

double gbps(std::size_t bytes, int copies, double ms) {
  return ms > 0.0 ? static_cast<double>(bytes) * copies / (ms * 1e6) : 0.0;
}

Summary summary_of(const std::vector<double>& v) { return summarize(v).value_or(Summary{}); }

void mark_integrity(Cell& c) {
  for (const auto& ic : c.integrity) {
    if (ic.bad_bytes > 0 && c.status != Status::failed) {
      c.status = Status::failed;
      c.reason = "integrity: " + ic.label + ": " + std::to_string(ic.bad_bytes) + " bad bytes of " +
                 std::to_string(ic.checked_bytes) + ", first at offset " + std::to_string(*ic.first_bad_offset);
    }
  }
}

void run_peer_access(Agent& a, CaseResult& cr) {
  cr.matrix_keys = {"peer_access", "performance_rank"};
  const int n = a.gpu_count();
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s == d) {
        continue;
      }
      const PeerInfo& pi = a.peer(s, d);
      Cell c;
      c.src = s;
      c.dst = d;
      c.numbers = {{"peer_access", pi.can_access ? 1.0 : 0.0},
                   {"performance_rank", static_cast<double>(pi.performance_rank)},
                   {"native_atomics", static_cast<double>(pi.native_atomics)}};
      if (!pi.can_access) {
        c.status = Status::failed;
        c.reason = pi.error;
      }
      cr.cells.push_back(std::move(c));
    }
  }
  cr.steps = 1;
}

enum class Engine { ce, sm };

// Unidirectional bandwidth: `issuer_is_src` (write/push) or the destination (read/pull).
void run_unidirectional(Agent& a, CaseResult& cr, Engine engine, bool issuer_is_src) {
  cr.matrix_keys = {"bandwidth_gbps"};
  const auto steps = unidirectional_steps(a.gpu_count(), a.opt().mode, a.selected());
  const std::size_t size = a.size();
  const std::string label = std::string(engine == Engine::ce ? "ce_" : "sm_") + (issuer_is_src ? "write" : "read");
  a.run_pair_steps(cr, steps, true, [&](const Round& pairs, int) {
    std::vector<TimedOp> ops;
    for (const auto& p : pairs) {
      a.fill(p.src, a.gpu(p.src).buf_a, size, mix32(a.seed(), p.src, 1));
      a.fill(p.dst, a.gpu(p.dst).buf_b, size, mix32(a.seed(), p.dst, 2));
    }
    for (const auto& p : pairs) {
      a.sync(p.src);
      a.sync(p.dst);
    }
    for (const auto& p : pairs) {
      TimedOp op;
      op.gpu = issuer_is_src ? p.src : p.dst;
      op.stream = a.gpu(op.gpu).stream[0];
      char* dst = a.gpu(p.dst).buf_b;
      const char* src = a.gpu(p.src).buf_a;
      const int sms = a.gpu(op.gpu).prop.multiProcessorCount;
      auto one = [dst, src, size, sms, engine](cudaStream_t s) {
        if (engine == Engine::ce) {
          CK(cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToDevice, s));
        } else {
          CK(gpu::launch_sm_copy(dst, src, size, sms, s));
        }
      };
      const int warm = a.opt().warmup;
      const int copies = a.opt().copies;
      op.warm = [one, warm](cudaStream_t s) {
        for (int i = 0; i < warm; ++i) {
          one(s);
        }
      };
      op.timed = [one, copies](cudaStream_t s) {
        for (int i = 0; i < copies; ++i) {
          one(s);
        }
      };
      ops.push_back(std::move(op));
    }
    a.time_ops(ops, a.opt().iterations);
    std::vector<Cell> cells;
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      const Pair& p = pairs[k];
      Cell c;
      c.src = p.src;
      c.dst = p.dst;
      std::vector<double> bw;
      for (double ms : ops[k].ms) {
        bw.push_back(gbps(size, a.opt().copies, ms));
      }
      c.measures.emplace_back("bandwidth_gbps", summary_of(bw));
      gpu::VerifySpec spec;
      spec.dst = a.gpu(p.dst).buf_b;
      spec.dst_bytes = size;
      spec.region_len = size;
      spec.seed = mix32(a.seed(), p.src, 1);
      spec.poison_seed = mix32(a.seed(), p.dst, 2);
      c.integrity.push_back(a.verify(p.dst, spec, label + "/bandwidth_buffer"));
      mark_integrity(c);
      cells.push_back(std::move(c));
    }
    return cells;
  });
}

void run_ce_write(Agent& a, CaseResult& cr) { run_unidirectional(a, cr, Engine::ce, true); }
void run_ce_read(Agent& a, CaseResult& cr) { run_unidirectional(a, cr, Engine::ce, false); }
void run_sm_write(Agent& a, CaseResult& cr) { run_unidirectional(a, cr, Engine::sm, true); }
void run_sm_read(Agent& a, CaseResult& cr) { run_unidirectional(a, cr, Engine::sm, false); }

void run_ce_bidir(Agent& a, CaseResult& cr) {
  cr.matrix_keys = {"bandwidth_gbps", "direction_bandwidth_gbps"};
  const auto steps = bidirectional_steps(a.gpu_count(), a.opt().mode, a.selected());
  const std::size_t size = a.size();
  a.run_pair_steps(cr, steps, true, [&](const Round& pairs, int) {
    std::vector<TimedOp> ops;
    std::vector<Pair> dirs;  // data flow of each op
    for (const auto& p : pairs) {
      for (int g : {p.src, p.dst}) {
        a.fill(g, a.gpu(g).buf_a, size, mix32(a.seed(), g, 3));
        a.fill(g, a.gpu(g).buf_b, size, mix32(a.seed(), g, 4));
      }
    }
    for (const auto& p : pairs) {
      a.sync(p.src);
      a.sync(p.dst);
    }
    for (const auto& p : pairs) {
      for (const Pair d : {p, Pair{p.dst, p.src}}) {
        TimedOp op;
        op.gpu = d.dst;  // read: the destination pulls, as nvbandwidth's bidirectional read_ce
        op.stream = a.gpu(op.gpu).stream[0];
        char* dst = a.gpu(d.dst).buf_b;
        const char* src = a.gpu(d.src).buf_a;
        const int warm = a.opt().warmup;
        const int copies = a.opt().copies;
        op.warm = [=](cudaStream_t s) {
          for (int i = 0; i < warm; ++i) {
            CK(cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToDevice, s));
          }
        };
        op.timed = [=](cudaStream_t s) {
          for (int i = 0; i < copies; ++i) {
            CK(cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToDevice, s));
          }
        };
        ops.push_back(std::move(op));
        dirs.push_back(d);
      }
    }
    a.time_ops(ops, a.opt().iterations);
    std::vector<Cell> cells;
    for (std::size_t k = 0; k < ops.size(); k += 2) {
      std::vector<double> total;
      std::array<std::vector<double>, 2> each;
      for (std::size_t i = 0; i < ops[k].ms.size(); ++i) {
        const double x = gbps(size, a.opt().copies, ops[k].ms[i]);
        const double y = gbps(size, a.opt().copies, ops[k + 1].ms[i]);
        each[0].push_back(x);
        each[1].push_back(y);
        total.push_back(x + y);
      }
      for (std::size_t j = 0; j < 2; ++j) {
        const Pair d = dirs[k + j];
        Cell c;
        c.src = d.src;
        c.dst = d.dst;
        c.measures.emplace_back("bandwidth_gbps", summary_of(total));
        c.measures.emplace_back("direction_bandwidth_gbps", summary_of(each[j]));
        gpu::VerifySpec spec;
        spec.dst = a.gpu(d.dst).buf_b;
        spec.dst_bytes = size;
        spec.region_len = size;
        spec.seed = mix32(a.seed(), d.src, 3);
        spec.poison_seed = mix32(a.seed(), d.dst, 4);
        c.integrity.push_back(a.verify(d.dst, spec, "ce_bidir/bandwidth_buffer"));
        mark_integrity(c);
        cells.push_back(std::move(c));
      }
    }
    return cells;
  });
}

void run_latency(Agent& a, CaseResult& cr) {
  cr.matrix_keys = {"latency_ns"};
  const auto steps = unidirectional_steps(a.gpu_count(), a.opt().mode, a.selected());
  const int accesses = a.opt().latency_accesses;
  a.run_pair_steps(cr, steps, true, [&](const Round& pairs, int) {
    // Rewrite each chain on its own GPU first, so that it sits in that GPU's L2 as it would after
    // a long chase (the bandwidth cases evicted it); the first sample then matches the others.
    for (const auto& p : pairs) {
      a.set_device(p.dst);
      CK(gpu::launch_chain_init(a.gpu(p.dst).lat, kLatencyBytes, a.gpu(p.dst).stream[0]));
    }
    for (const auto& p : pairs) {
      a.sync(p.dst);
    }
    std::vector<TimedOp> ops;
    for (const auto& p : pairs) {
      TimedOp op;
      op.gpu = p.src;  // the GPU that runs the loads
      op.stream = a.gpu(p.src).stream[0];
      const void* start = a.gpu(p.dst).lat;  // memory of the peer
      unsigned long long* sink = a.gpu(p.src).sink;
      // The timed accesses are spread over `targets` SMs, one launch each (nvbandwidth averages
      // over every SM; a launch costs a few microseconds against about 1.7 ms of chase).
      const int sms = a.gpu(p.src).prop.multiProcessorCount;
      const int targets = std::min(a.opt().latency_sms, sms);
      const int per_target = std::max(accesses / targets, 1);
      op.warm = [=](cudaStream_t s) { CK(gpu::launch_chase(start, std::max(accesses / 8, 16), sink, sms, 0, s)); };
      op.timed = [=](cudaStream_t s) {
        for (int t = 0; t < targets; ++t) {
          CK(gpu::launch_chase(start, per_target, sink, sms, t * sms / targets, s));
        }
      };
      ops.push_back(std::move(op));
    }
    a.time_ops(ops, a.opt().iterations);
    std::vector<Cell> cells;
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      Cell c;
      c.src = pairs[k].src;
      c.dst = pairs[k].dst;
      std::vector<double> ns;
      const int targets = std::min(a.opt().latency_sms, a.gpu(c.src).prop.multiProcessorCount);
      const int done = std::max(accesses / targets, 1) * targets;
      for (double ms : ops[k].ms) {
        ns.push_back(ms * 1e6 / done);
      }
      c.measures.emplace_back("latency_ns", summary_of(ns));
      cells.push_back(std::move(c));
    }
    return cells;
  });
}

void run_host_device(Agent& a, CaseResult& cr) {
  cr.shape = CellShape::gpu;
  cr.matrix_keys = {"h2d_bandwidth_gbps", "d2h_bandwidth_gbps", "link_theoretical_gbps"};
  const std::size_t hs = a.host_size();
  char* host = a.host_buf();
  for (int g = 0; g < a.gpu_count(); ++g) {
    Cell c;
    c.src = g;
    if (a.budget_spent()) {
      c.status = Status::waived;
      c.reason = budget_reason(a.opt().time_budget_s);
      cr.cells.push_back(std::move(c));
      continue;
    }
    try {
      const std::uint32_t seed = mix32(a.seed(), g, 5);
      const std::uint32_t poison = mix32(a.seed(), g, 6);
      a.fill(g, a.gpu(g).buf_a, hs, seed);
      a.fill(g, a.gpu(g).buf_b, hs, poison);
      a.sync(g);
      char* dev_src = a.gpu(g).buf_a;
      char* dev_dst = a.gpu(g).buf_b;
      const int warm = a.opt().warmup;
      const int copies = a.opt().copies;
      auto make = [&](bool d2h) {
        TimedOp op;
        op.gpu = g;
        op.stream = a.gpu(g).stream[0];
        auto one = [=](cudaStream_t s) {
          if (d2h) {
            CK(cudaMemcpyAsync(host, dev_src, hs, cudaMemcpyDeviceToHost, s));
          } else {
            CK(cudaMemcpyAsync(dev_dst, host, hs, cudaMemcpyHostToDevice, s));
          }
        };
        op.warm = [=](cudaStream_t s) {
          for (int i = 0; i < warm; ++i) {
            one(s);
          }
        };
        op.timed = [=](cudaStream_t s) {
          for (int i = 0; i < copies; ++i) {
            one(s);
          }
        };
        return op;
      };
      std::vector<TimedOp> d2h{make(true)};
      a.time_ops(d2h, a.opt().iterations);
      std::vector<TimedOp> h2d{make(false)};
      a.time_ops(h2d, a.opt().iterations);
      std::vector<double> up;
      std::vector<double> down;
      for (double ms : h2d[0].ms) {
        up.push_back(gbps(hs, copies, ms));
      }
      for (double ms : d2h[0].ms) {
        down.push_back(gbps(hs, copies, ms));
      }
      const Summary su = summary_of(up);
      const Summary sd = summary_of(down);
      c.measures.emplace_back("h2d_bandwidth_gbps", su);
      c.measures.emplace_back("d2h_bandwidth_gbps", sd);
      const auto link = read_link_info("/sys", bdf_string(a.gpu(g).prop));
      if (link) {
        c.numbers.emplace_back("link_theoretical_gbps", link->theoretical_gbps);
        c.numbers.emplace_back("link_speed_gts", link->current_speed_gts);
        c.numbers.emplace_back("link_width", static_cast<double>(link->current_width));
        c.numbers.emplace_back("h2d_link_utilization_pct", su.median / link->theoretical_gbps * 100.0);
        c.numbers.emplace_back("d2h_link_utilization_pct", sd.median / link->theoretical_gbps * 100.0);
      }
      gpu::VerifySpec spec;
      spec.dst = dev_dst;
      spec.dst_bytes = hs;
      spec.region_len = hs;
      spec.seed = seed;
      spec.poison_seed = poison;
      c.integrity.push_back(a.verify(g, spec, "d2h_then_h2d"));
      mark_integrity(c);
    } catch (const std::exception& e) {
      c.status = Status::failed;
      c.reason = e.what();
      cudaGetLastError();
    }
    cr.cells.push_back(std::move(c));
  }
  cr.steps = a.gpu_count();
}

// Data integrity: for every ordered pair and each engine (copy engine issued by the source or by
// the destination; SM stores by the source; SM loads by the destination), three passes:
//   address_seed:   poisoned destination, address-derived words mixed with a per-run seed
//                   (exposes zeros, NaN, wrong addresses, lost copies);
//   stale:          a new seed over the last pass's data, no poison (exposes stale data);
//   partial_offset: unaligned source and destination offsets and an odd length inside a
//                   poisoned buffer (exposes partial copies and overruns: guards checked).
// Every byte of the destination buffer is checked on the destination GPU.
void run_integrity(Agent& a, CaseResult& cr) {
  cr.matrix_keys = {"bad_bytes"};
  const auto steps = unidirectional_steps(a.gpu_count(), a.opt().mode, a.selected());
  const std::size_t size = a.integrity_size();
  struct EngineDef {
    const char* name;
    Engine engine;
    bool issuer_is_src;
  };
  const std::array<EngineDef, 4> engines{{{"ce_write", Engine::ce, true},
                                          {"ce_read", Engine::ce, false},
                                          {"sm_write", Engine::sm, true},
                                          {"sm_read", Engine::sm, false}}};
  a.run_pair_steps(cr, steps, true, [&](const Round& pairs, int) {
    std::vector<Cell> cells(pairs.size());
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      cells[k].src = pairs[k].src;
      cells[k].dst = pairs[k].dst;
    }
    for (std::size_t e = 0; e < engines.size(); ++e) {
      const EngineDef& eng = engines[e];
      for (int pass = 0; pass < 3; ++pass) {
        const char* pass_name = pass == 0 ? "address_seed" : (pass == 1 ? "stale" : "partial_offset");
        // Offsets: CE takes any byte offset; the SM copy moves 16-byte words.
        const std::size_t src_off = pass == 2 ? (eng.engine == Engine::ce ? 12 : 16) : 0;
        const std::size_t dst_off = pass == 2 ? (eng.engine == Engine::ce ? 4096 + 7 : 4096 + 32) : 0;
        const std::size_t len = pass == 2 ? (eng.engine == Engine::ce ? size - 8192 - 13 : size - 8192) : size;
        std::vector<std::uint32_t> seeds(pairs.size());
        std::vector<std::uint32_t> poisons(pairs.size());
        for (std::size_t k = 0; k < pairs.size(); ++k) {
          const Pair& p = pairs[k];
          seeds[k] = mix32(a.seed(), static_cast<std::uint64_t>(p.src * 1000 + p.dst), 100 + e, pass);
          // The stale pass does not poison: the destination still holds the previous pass's
          // data, and the whole buffer must now match the new seed.
          poisons[k] = mix32(a.seed(), static_cast<std::uint64_t>(p.src * 1000 + p.dst), 200 + e, pass);
          a.fill(p.src, a.gpu(p.src).buf_a, size, seeds[k]);
          if (pass != 1) {
            a.fill(p.dst, a.gpu(p.dst).buf_b, size, poisons[k]);
          }
        }
        for (const auto& p : pairs) {
          a.sync(p.src);
          a.sync(p.dst);
        }
        for (std::size_t k = 0; k < pairs.size(); ++k) {
          const Pair& p = pairs[k];
          const int issuer = eng.issuer_is_src ? p.src : p.dst;
          a.set_device(issuer);
          cudaStream_t s = a.gpu(issuer).stream[0];
          char* dst = a.gpu(p.dst).buf_b;
          const char* src = a.gpu(p.src).buf_a;
          if (eng.engine == Engine::ce) {
            CK(cudaMemcpyAsync(dst + dst_off, src + src_off, len, cudaMemcpyDeviceToDevice, s));
          } else {
            CK(gpu::launch_sm_copy(dst + dst_off, src + src_off, len, a.gpu(issuer).prop.multiProcessorCount, s));
          }
          if (a.inject() && *a.inject() == p && e == 0 && pass == 0) {
            // TEST ONLY: skew one region of this copy by 64 bytes (a wrong-address copy).
            const std::size_t off = std::min<std::size_t>(1024 * 1024, size / 2);
            CK(cudaMemcpyAsync(dst + off, src + off + 64, kInjectBytes, cudaMemcpyDeviceToDevice, s));
          }
        }
        for (const auto& p : pairs) {
          a.sync(p.src);
          a.sync(p.dst);
        }
        for (std::size_t k = 0; k < pairs.size(); ++k) {
          const Pair& p = pairs[k];
          gpu::VerifySpec spec;
          spec.dst = a.gpu(p.dst).buf_b;
          spec.dst_bytes = size;
          spec.region_off = dst_off;
          spec.region_len = len;
          spec.src_off = src_off;
          spec.seed = seeds[k];
          spec.poison_seed = poisons[k];
          cells[k].integrity.push_back(a.verify(p.dst, spec, std::string(eng.name) + "/" + pass_name));
        }
      }
    }
    for (auto& c : cells) {
      std::uint64_t bad = 0;
      for (const auto& ic : c.integrity) {
        bad += ic.bad_bytes;
      }
      c.numbers.emplace_back("bad_bytes", static_cast<double>(bad));
      mark_integrity(c);
    }
    return cells;
  });
}

// The one explicit list of cases, in the order they run.
const std::vector<CaseDef>& case_list() {
  static const std::vector<CaseDef> cases = {
      {"peer_access",
       "Peer access for every ordered pair: cudaDeviceCanAccessPeer, enabling it, the driver's performance "
       "rank and native atomics. Matrix row: the GPU that accesses, column: the GPU accessed.",
       need_two_gpus, run_peer_access},
      {"ce_write_bandwidth",
       "Copy-engine bandwidth, one direction, issued by the source GPU (push), every ordered pair; "
       "row: source, column: destination; every copied byte verified",
       need_peer_pair, run_ce_write},
      {"ce_read_bandwidth",
       "Copy-engine bandwidth, one direction, issued by the destination GPU (pull), every ordered pair; "
       "row: source, column: destination; every copied byte verified",
       need_peer_pair, run_ce_read},
      {"ce_bidir_bandwidth",
       "Copy-engine bandwidth both ways at once (each side pulls, as nvbandwidth's bidirectional read_ce); "
       "bandwidth_gbps is the total of both directions, direction_bandwidth_gbps the row->column share",
       need_peer_pair, run_ce_bidir},
      {"sm_write_bandwidth",
       "SM-driven copy, stores over the peer mapping (kernel on the source GPU); row: source, column: destination",
       need_peer_pair, run_sm_write},
      {"sm_read_bandwidth",
       "SM-driven copy, loads over the peer mapping (kernel on the destination GPU); row: source, column: "
       "destination",
       need_peer_pair, run_sm_read},
      {"latency",
       "Peer load latency by pointer chase (2 MiB chain, 128-byte stride, as nvbandwidth), spread over "
       "--latency-sms SMs; "
       "row: the GPU that loads, column: the GPU whose memory is read",
       need_peer_pair, run_latency},
      {"host_device_bandwidth",
       "Host<->device copy-engine bandwidth per GPU (pinned memory) beside the PCIe link's theoretical figure "
       "from sysfs; the data goes down and back up and is verified",
       always, run_host_device},
      {"integrity",
       "Data integrity on every ordered pair: CE push, CE pull, SM stores, SM loads; address-derived patterns "
       "mixed with a per-run seed, a stale-data pass and an unaligned partial copy inside guards; every byte "
       "checked on the destination GPU",
       need_peer_pair, run_integrity},
  };
  return cases;
}

}  // namespace

int run_agent(int argc, char** argv) {
  std::vector<std::string> keys;
  for (const auto& c : case_list()) {
    keys.emplace_back(c.key);
  }
  const auto parsed = parse_options(argc, argv, keys, P2PNODE_AGENT_VERSION);
  if (!parsed.options) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.message << "\n";
    return parsed.exit_code;
  }
  if (parsed.options->list) {
    for (const auto& c : case_list()) {
      std::cout << c.key << "\n    " << c.description << "\n";
    }
    return 0;
  }
  // Before the driver starts (the caller's own settings win):
  // - one hardware work queue per GPU: each GPU runs one timed stream at a time here, and every
  //   extra queue costs about 7 MB of pinned host memory per GPU (94 -> 45 MB per GPU on H200,
  //   bandwidth unchanged; tests/gpu/results/h200x4-diag);
  // - load kernels lazily.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 0);
  setenv("CUDA_MODULE_LOADING", "LAZY", 0);
  Agent agent(*parsed.options);
  return agent.main(case_list());
}

}  // namespace p2pnode::agent
