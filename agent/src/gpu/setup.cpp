// p2pnode-agent's set-up and release of the GPUs: contexts, streams and buffers (one thread per
// GPU, each timing its steps and reading the device memory they took), the latch, peer access for
// every ordered pair (one thread per accessing GPU), and the host phase's narrower set.
#include "agent.hpp"

namespace p2pnode::agent {
namespace {
// Device memory in use on the current GPU (every process's and the driver's).
std::uint64_t device_used_bytes() {
  std::size_t free_b = 0;
  std::size_t total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return total_b - free_b;
}

std::uint64_t grew(std::uint64_t before, std::uint64_t after) { return after > before ? after - before : 0; }
}  // namespace

// The run's sizes, seed, selected pairs and injected pair from the options; else what is wrong.
std::string Agent::take_run_settings() {
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
    if (!p) { return "--inject-corruption: " + err; }
    inject_ = p->front();
  }
  return {};
}

// GPU g's context, stream and buffers (in its own thread), each step timed with the device
// memory it took; an error goes to g.setup_error.
void Agent::set_up_gpu(Gpu& g) {
  GpuSetup& gs = gpu_setup_[static_cast<std::size_t>(g.index)];
  gs.gpu = g.index;
  try {
    auto t = Clock::now();
    CK(cudaSetDevice(g.ordinal));
    CK(cudaFree(nullptr));
    gs.context_s = seconds_since(t);
    const std::uint64_t after_context = device_used_bytes();
    t = Clock::now();
    CK(cudaStreamCreateWithFlags(&g.stream[0], cudaStreamNonBlocking));
    CK(cudaMalloc(reinterpret_cast<void**>(&g.buf_a), buf_bytes_));
    CK(cudaMalloc(reinterpret_cast<void**>(&g.buf_b), buf_bytes_));
    CK(cudaMalloc(reinterpret_cast<void**>(&g.lat), kLatencyBytes));
    CK(cudaMalloc(reinterpret_cast<void**>(&g.verify), sizeof(gpu::VerifyResult)));
    CK(cudaMalloc(reinterpret_cast<void**>(&g.sink), sizeof(unsigned long long)));
    CK(cudaMalloc(reinterpret_cast<void**>(&g.lat_ns), kLatencySlots * sizeof(unsigned long long)));
    gs.buffers_s = seconds_since(t);
    const std::uint64_t after_buffers = device_used_bytes();
    gs.buffer_bytes = grew(after_context, after_buffers);
    t = Clock::now();
    CK(gpu::launch_chain_init(g.lat, kLatencyBytes, g.stream[0]));
    CK(cudaStreamSynchronize(g.stream[0]));
    gs.module_s = seconds_since(t);
    gs.module_bytes = grew(after_buffers, device_used_bytes());
  } catch (const std::exception& e) { g.setup_error = e.what(); }
}

// Contexts, streams and buffers, one thread per GPU (context creation dominates start-up);
// the first GPU's error, if any.
std::string Agent::set_up_gpus() {
  gpu_setup_.assign(gpus_.size(), GpuSetup{});
  std::vector<std::thread> threads;
  for (auto& g : gpus_) {
    threads.emplace_back([this, &g] { set_up_gpu(g); });
  }
  for (auto& t : threads) { t.join(); }
  for (const auto& g : gpus_) {
    if (!g.setup_error.empty()) { return "GPU " + std::to_string(g.index) + ": " + g.setup_error; }
  }
  return {};
}

// Peer access, every ordered pair; one thread per accessing GPU (enabling maps the peer's
// memory into the GPU's page tables, which takes a while per pair).
void Agent::enable_all_peers() {
  const int n = gpu_count();
  peers_.assign(n, std::vector<PeerInfo>(n));
  std::vector<std::thread> peer_threads;
  for (int a = 0; a < n; ++a) {
    peer_threads.emplace_back([this, a] { enable_peers(a); });
  }
  for (auto& t : peer_threads) { t.join(); }
}

std::string Agent::setup() {
  if (auto err = take_run_settings(); !err.empty()) { return err; }
  if (auto err = set_up_gpus(); !err.empty()) { return err; }
  mark("contexts_and_buffers");
  CK(cudaSetDevice(gpus_[0].ordinal));
  CK(cudaHostAlloc(reinterpret_cast<void**>(&latch_), 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  mark("latch");
  enable_all_peers();
  mark("peer_access_enabled");
  return {};
}

void Agent::enable_peers(int a) {
  const auto t0 = Clock::now();
  if (cudaSetDevice(gpus_[a].ordinal) != cudaSuccess) { return; }
  const std::uint64_t before = device_used_bytes();
  const int n = gpu_count();
  for (int b = 0; b < n; ++b) {
    if (a == b) { continue; }
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
    if (cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, gpus_[a].ordinal, gpus_[b].ordinal) ==
        cudaSuccess) {
      pi.native_atomics = atomics;
    }
    if (can == 0) {
      pi.error = "cudaDeviceCanAccessPeer reports no peer access";
      continue;
    }
    const cudaError_t en = cudaDeviceEnablePeerAccess(gpus_[b].ordinal, 0);
    if (en != cudaSuccess && en != cudaErrorPeerAccessAlreadyEnabled) {
      pi.error =
          std::string("cudaDeviceEnablePeerAccess: ") + cudaGetErrorName(en) + " (" + cudaGetErrorString(en) + ")";
      cudaGetLastError();
      continue;
    }
    cudaGetLastError();
    pi.can_access = true;
  }
  GpuSetup& gs = gpu_setup_[static_cast<std::size_t>(a)];
  gs.peer_access_bytes = grew(before, device_used_bytes());
  gs.peer_access_s = seconds_since(t0);
}

void Agent::begin_host_phase() {
  // With three GPUs or more the last one's context goes first: the host buffer (smaller than a
  // context) then lives beside one context fewer than the pair cases had. With two it would have
  // to be GPU 0's, which holds the latch, and two contexts and the buffer stay under the peak of
  // nvbandwidth's ratio anyway.
  if (gpu_count() >= 3) {
    release_gpu(gpu_count() - 1);
    mark("host_phase_context_reset");
  }
  if (host_buf_ == nullptr) {
    set_device(0);
    CK(cudaHostAlloc(reinterpret_cast<void**>(&host_buf_), host_size_, cudaHostAllocPortable));
  }
  mark("host_buffer");
}

void Agent::take_for_host_phase(int i) {
  if (!gpus_[i].released) { return; }
  if (i > 1) {
    release_gpu(i - 1);  // its host cell is done; GPU 0 keeps the latch
  }
  acquire_gpu(i);
}

void Agent::release_gpu(int i) {
  Gpu& g = gpus_[i];
  if (g.released || cudaSetDevice(g.ordinal) != cudaSuccess) { return; }
  cudaDeviceReset();  // the context and everything in it: buffers, streams, peer mappings
  cudaGetLastError();
  g.stream = {};
  g.buf_a = g.buf_b = g.lat = nullptr;
  g.verify = nullptr;
  g.sink = g.lat_ns = nullptr;
  g.released = true;
}

void Agent::acquire_gpu(int i) {
  Gpu& g = gpus_[i];
  if (!g.released) { return; }
  set_device(i);  // creates the context again
  g.released = false;
  CK(cudaStreamCreateWithFlags(&g.stream[0], cudaStreamNonBlocking));
  CK(cudaMalloc(reinterpret_cast<void**>(&g.buf_a), host_size_));
  CK(cudaMalloc(reinterpret_cast<void**>(&g.buf_b), host_size_));
  CK(cudaMalloc(reinterpret_cast<void**>(&g.verify), sizeof(gpu::VerifyResult)));
}

void Agent::release() {
  for (auto& g : gpus_) {
    if (g.released) {  // cudaSetDevice would create its context again
      g = Gpu{};
      continue;
    }
    if (cudaSetDevice(g.ordinal) != cudaSuccess) { continue; }
    cudaDeviceSynchronize();
    cudaFree(g.buf_a);
    cudaFree(g.buf_b);
    cudaFree(g.lat);
    cudaFree(g.verify);
    cudaFree(g.sink);
    cudaFree(g.lat_ns);
    for (auto& s : g.stream) {
      if (s != nullptr) { cudaStreamDestroy(s); }
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

}  // namespace p2pnode::agent
