// p2pnode-agent: runs the peer-to-peer self-tests on every visible GPU and prints one JSON
// document (or tables). This file: the timing latch, the run of the cases, the breakdown marks
// and the entry point; set-up and release of the GPUs in setup.cpp, the cases in cases.cpp, the
// kernels in kernels.cu.
#include "agent.hpp"
#include "p2pnode/agent/nvml.hpp"

#include <malloc.h>

namespace p2pnode::agent {

std::string budget_reason(double budget_s) {
  std::ostringstream ss;
  ss << "time budget of " << budget_s << " s spent";
  return ss.str();
}

std::uint64_t current_rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) { return 0; }
  unsigned long long pages_total = 0;
  unsigned long long pages_resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &pages_total, &pages_resident);
  std::fclose(f);
  return got == 2 ? pages_resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

void copy_n(void* dst, const void* src, std::size_t bytes, int n, cudaStream_t s) {
  if (n <= 0) { return; }
#if CUDART_VERSION >= 12080                // cudaMemcpyBatchAsync came with CUDA 12.8 (Debian's toolkit is 12.4)
  static std::atomic<bool> batches{true};  // false once the driver has refused one
  if (n > 1 && batches.load(std::memory_order_relaxed)) {
    std::vector<void*> dsts(static_cast<std::size_t>(n), dst);
    std::vector<const void*> srcs(static_cast<std::size_t>(n), src);
    std::vector<std::size_t> sizes(static_cast<std::size_t>(n), bytes);
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;  // the source is read in stream order
    std::size_t attr_index = 0;
    const cudaError_t e =
        cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), sizes.size(), &attr, &attr_index, 1, s);
    if (e == cudaSuccess) { return; }
    if (e != cudaErrorNotSupported && e != cudaErrorCallRequiresNewerDriver && e != cudaErrorInvalidValue) { CK(e); }
    cudaGetLastError();
    batches.store(false, std::memory_order_relaxed);
  }
#endif
  for (int i = 0; i < n; ++i) { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s)); }
}

namespace {
// The resident set by kind from /proc/self/status (kB lines); zeros where the kernel has none.
void rss_kinds(Phase& ph) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) { return; }
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long kb = 0;
    if (std::sscanf(line, "RssAnon: %llu kB", &kb) == 1) {
      ph.rss_anon_bytes = kb * 1024ULL;
    } else if (std::sscanf(line, "RssFile: %llu kB", &kb) == 1) {
      ph.rss_file_bytes = kb * 1024ULL;
    } else if (std::sscanf(line, "RssShmem: %llu kB", &kb) == 1) {
      ph.rss_shmem_bytes = kb * 1024ULL;
    }
  }
  std::fclose(f);
}

}  // namespace

void Agent::mark(const char* name) {
  Phase ph{name, seconds_since(t0_), current_rss_bytes()};
  rss_kinds(ph);
  phases_.push_back(std::move(ph));
}

// ---------------------------------------------------------------------------------------------

void Agent::time_ops(std::vector<TimedOp>& ops, int samples, bool hold) {
  const Lap lap(times_ ? &times_->timed_s : nullptr);
  hold = hold && !opt_.no_hold;
  // Per op: samples + 1 events; sample k is the time between events k and k + 1.
  std::vector<std::vector<cudaEvent_t>> events(ops.size());
  struct Cleanup {
    std::vector<TimedOp>& ops;
    std::vector<std::vector<cudaEvent_t>>& events;
    Agent& agent;
    int* latch;
    bool armed = true;
    ~Cleanup() {
      if (armed) {  // an enqueue failed: let the held streams go before unwinding
        __atomic_store_n(&latch[0], 1, __ATOMIC_SEQ_CST);
        for (auto& op : ops) {
          cudaSetDevice(agent.gpu(op.gpu).ordinal);
          cudaStreamSynchronize(op.stream);
        }
      }
      for (std::size_t i = 0; i < ops.size(); ++i) {
        cudaSetDevice(agent.gpu(ops[i].gpu).ordinal);
        for (auto e : events[i]) { cudaEventDestroy(e); }
      }
    }
  } cleanup{ops, events, *this, latch_};
  __atomic_store_n(&latch_[0], 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&latch_[1], 0, __ATOMIC_SEQ_CST);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    TimedOp& op = ops[i];
    set_device(op.gpu);
    events[i].assign(static_cast<std::size_t>(samples) + 1, nullptr);
    for (auto& e : events[i]) { CK(cudaEventCreate(&e)); }
    // The samples follow each other in one hold: the warm-up runs once, and every sample starts
    // right after the previous one ended, with the copy engine or SMs already streaming.
    if (hold) { CK(gpu::launch_spin(latch_, &latch_[1], kSpinTimeoutNs, op.stream)); }
    op.warm(op.stream);
    CK(cudaEventRecord(events[i][0], op.stream));
    for (int k = 0; k < samples; ++k) {
      op.timed(op.stream);
      CK(cudaEventRecord(events[i][static_cast<std::size_t>(k) + 1], op.stream));
    }
  }
  __atomic_store_n(&latch_[0], 1, __ATOMIC_SEQ_CST);
  cleanup.armed = false;
  for (auto& op : ops) {
    set_device(op.gpu);
    CK(cudaStreamSynchronize(op.stream));
  }
  if (__atomic_load_n(&latch_[1], __ATOMIC_SEQ_CST) != 0) {
    throw CudaError("spin kernel timed out: enqueueing the timed copies took longer than 10 s");
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (int k = 0; k < samples; ++k) {
      float ms = 0.0F;
      CK(cudaEventElapsedTime(&ms, events[i][static_cast<std::size_t>(k)], events[i][static_cast<std::size_t>(k) + 1]));
      ops[i].ms.push_back(static_cast<double>(ms));
    }
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
    if (active.empty()) { continue; }
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

namespace {
std::uint64_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::uint64_t>(ru.ru_maxrss) * 1024ULL;
}

// The report as the run starts: the clock, the options it took and the CUDA settings in effect.
Report report_at_agent_start(const Options& opt) {
  Report rep;
  rep.agent_version = P2PNODE_AGENT_VERSION;
  rep.started_at = rfc3339_utc(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  rep.mode = opt.mode;
  rep.iterations = opt.iterations;
  rep.copies = opt.copies;
  rep.warmup = opt.warmup;
  rep.latency_accesses = opt.latency_accesses;
  rep.latency_sms = opt.latency_sms;
  rep.time_budget_s = opt.time_budget_s;
  rep.inject_corruption = opt.inject_corruption;
  for (const char* var :
       {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_MODULE_LOADING", "CUDA_SCALE_LAUNCH_QUEUES"}) {
    if (const char* v = std::getenv(var)) { rep.environment.emplace_back(var, v); }
  }
  return rep;
}

// What the report says about CUDA device i (its PCIe link read from sysfs).
DeviceInfo device_info_of_gpu(int i, const cudaDeviceProp& prop) {
  DeviceInfo d;
  d.index = i;
  d.cuda_ordinal = i;
  d.name = prop.name;
  d.uuid = uuid_string(prop.uuid);
  d.pci_bus_id = bdf_string(prop);
  d.memory_bytes = prop.totalGlobalMem;
  d.compute_capability_major = prop.major;
  d.compute_capability_minor = prop.minor;
  d.multiprocessor_count = prop.multiProcessorCount;
  d.pcie_link = read_link_info("/sys", d.pci_bus_id);
  return d;
}

}  // namespace

// The end of every run: the totals, then the document (and the breakdown with --timings).
int Agent::emit_report(Report& rep) {
  rep.duration_s = std::chrono::duration<double>(Clock::now() - t0_).count();
  rep.peak_rss_bytes = peak_rss_bytes();
  rep.phases = phases_;
  finalize(rep);
  if (opt_.timings) { std::cerr << render_timings(rep); }
  if (opt_.format == Format::table) {
    std::cout << render_table(rep);
  } else {
    std::cout << to_json(rep).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  std::cout.flush();
  return rep.exit_code;
}

// The driver and every GPU it shows, into rep.devices and gpus_; false, with rep.error, when
// there is no driver or GPU or a GPU's properties cannot be read.
bool Agent::find_gpus(Report& rep) {
  int count = 0;
  const cudaError_t ce = cudaGetDeviceCount(&count);
  mark("driver_initialized");
  cudaDriverGetVersion(&rep.driver_version);
  cudaRuntimeGetVersion(&rep.runtime_version);
  if (ce != cudaSuccess || count == 0) {
    rep.error = ce != cudaSuccess ? std::string("no usable GPU or driver: ") + cudaGetErrorName(ce) + " (" +
                                        cudaGetErrorString(ce) + ")"
                                  : std::string("no GPU found");
    return false;
  }
  for (int i = 0; i < count; ++i) {
    Gpu g;
    g.index = i;
    g.ordinal = i;
    if (cudaGetDeviceProperties(&g.prop, i) != cudaSuccess) {
      rep.error = "cudaGetDeviceProperties failed for device " + std::to_string(i);
      return false;
    }
    rep.devices.push_back(device_info_of_gpu(i, g.prop));
    gpus_.push_back(std::move(g));
  }
  return true;
}

// NVML: how the pairs are connected and who else uses the GPUs (runs in a thread of its own).
void Agent::read_nvml(Report& rep) {
  const auto t = Clock::now();
  std::vector<std::string> bus_ids;
  for (const auto& d : rep.devices) { bus_ids.push_back(d.pci_bus_id); }
  rep.interconnect = read_interconnect(bus_ids);
  watch_ = std::make_unique<ProcessWatch>(bus_ids, static_cast<unsigned>(::getpid()));
  rep.contention.emplace();
  rep.contention->source = watch_->available() ? "nvml" : "none";
  rep.contention->reason = watch_->reason();
  rep.contention->before = watch_->sample();
  rep.nvml_s = seconds_since(t);
}

// The GPUs set up while NVML is read: opening it takes a while and needs nothing of CUDA.
// Returns the set-up error, or empty.
std::string Agent::set_up_beside_nvml(Report& rep) {
  std::thread nvml_thread([this, &rep] { read_nvml(rep); });
  std::string setup_error;
  try {
    setup_error = setup();
  } catch (const std::exception& e) { setup_error = std::string("setup: ") + e.what(); }
  nvml_thread.join();
  mark("nvml_joined");
  if (watch_) {  // what this process holds on each GPU, as the driver counts it
    const auto own = watch_->own_memory(static_cast<unsigned>(::getpid()));
    for (std::size_t i = 0; i < own.size() && i < gpu_setup_.size(); ++i) {
      GpuSetup& gs = gpu_setup_[i];
      gs.process_bytes = own[i];
      if (own[i]) {
        const std::uint64_t known = gs.module_bytes + gs.buffer_bytes + gs.peer_access_bytes;
        gs.context_bytes = *own[i] > known ? *own[i] - known : 0;
      }
    }
  }
  return setup_error;
}

// --mode auto: rounds or serial from NVML's links; in rounds mode, the rounds of the selected pairs.
void Agent::choose_schedule(Report& rep) {
  if (opt_.mode_auto) {
    const auto choice = choose_mode(selected_, [&](int a, int b) -> std::optional<int> {
      if (!rep.interconnect || rep.interconnect->source != "nvml") { return std::nullopt; }
      for (const auto& p : rep.interconnect->pairs) {
        if (p.a == a && p.b == b) { return p.nvlinks; }
      }
      return 0;  // NVML knows the GPUs and lists no NVLink between them
    });
    opt_.mode = choice.mode;
    rep.mode = choice.mode;
    rep.mode_reason = choice.reason;
  }
  if (opt_.mode == Mode::rounds) {
    rep.rounds = filter_rounds(circle_rounds(gpu_count()), [&](int a, int b) {
      return std::find(selected_.begin(), selected_.end(), Pair{a, b}) != selected_.end();
    });
  }
}

// Whether --cases (or, without it, the default set) takes case c.
bool Agent::case_selected(const CaseDef& c) const {
  if (!opt_.cases.empty() && std::find(opt_.cases.begin(), opt_.cases.end(), c.key) == opt_.cases.end()) {
    return false;
  }
  return !(opt_.cases.empty() && c.opt_in);
}

// One case: waived (its filter, or the time budget), or run; failed with the error's text when
// it throws. Then who else was on the GPUs meanwhile.
CaseResult Agent::run_case(const CaseDef& c) {
  CaseResult cr;
  cr.key = c.key;
  cr.description = c.description;
  const auto t = Clock::now();
  times_ = &cr.timings;
  std::string why = c.filter(*this);
  if (why.empty() && budget_spent()) { why = budget_reason(opt_.time_budget_s); }
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
  times_ = nullptr;
  cr.duration_s = std::chrono::duration<double>(Clock::now() - t).count();
  if (watch_) { cr.foreign_processes = watch_->sample(); }
  return cr;
}

int Agent::main(const std::vector<CaseDef>& cases) {
  Report rep = report_at_agent_start(opt_);
  mark("start");
  if (!find_gpus(rep)) { return emit_report(rep); }
  const std::string setup_error = set_up_beside_nvml(rep);
  rep.gpu_setup = gpu_setup_;
  if (!setup_error.empty()) {
    rep.error = setup_error;
    rep.seed = seed_;
    return emit_report(rep);
  }
  rep.seed = seed_;
  rep.setup_s = std::chrono::duration<double>(Clock::now() - t0_).count();
  rep.size_bytes = size_;
  rep.host_size_bytes = host_size_;
  rep.integrity_size_bytes = integrity_size_;
  rep.bar_size_bytes = opt_.bar_size_bytes;
  choose_schedule(rep);

  for (const auto& c : cases) {
    if (!case_selected(c)) { continue; }
    rep.cases.push_back(run_case(c));
    mark(("after_" + std::string(c.key)).c_str());
  }
  if (watch_) { rep.contention->after = watch_->sample(); }
  release();
  mark("released");
  return emit_report(rep);
}

int run_agent(int argc, char** argv) {
  std::vector<std::string> keys;
  for (const auto& c : case_list()) { keys.emplace_back(c.key); }
  const auto parsed = parse_options(argc, argv, keys, P2PNODE_AGENT_VERSION);
  if (!parsed.options) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.message << "\n";
    return parsed.exit_code;
  }
  if (parsed.options->processes) {  // before any CUDA call: no context on any GPU
    ProcessWatch watch({}, 0);
    std::cout << processes_document(watch, P2PNODE_AGENT_VERSION)
                     .dump(1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
    return 0;
  }
  if (parsed.options->list) {
    for (const auto& c : case_list()) {
      std::cout << c.key << (c.opt_in ? " (only when --cases names it)" : "") << "\n    " << c.description << "\n";
    }
    return 0;
  }
  // Before the driver starts (the caller's own settings win):
  // - one hardware work queue per GPU: each GPU runs one timed stream at a time here, and every
  //   extra queue costs about 7 MB of pinned host memory per GPU (94 -> 45 MB per GPU on H200,
  //   bandwidth unchanged; agent/README.md, "Where the time goes");
  // - load kernels lazily;
  // - a quarter of the driver's default launch queue per context: the agent queues at most a few
  //   dozen operations per stream, and it saves about 2 MB of host memory per GPU;
  // - one malloc arena: the per-GPU set-up threads would each get an arena of their own that the
  //   driver's allocations then fragment (2.5 MB less on 4 GPUs).
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 0);
  setenv("CUDA_MODULE_LOADING", "LAZY", 0);
  setenv("CUDA_SCALE_LAUNCH_QUEUES", "0.25x", 0);
  mallopt(M_ARENA_MAX, 1);

  for (const auto& spec : parsed.options->nvme) {
    std::string err;
    if (!nvme::parse_drive_spec(spec, err)) {
      std::cerr << err << "\n";
      return 2;
    }
  }
  Agent agent(*parsed.options);
  return agent.main(case_list());
}

void Agent::run_gpu_cells(CaseResult& cr, const std::function<void(int, Cell&)>& fn) {
  for (int g = 0; g < gpu_count(); ++g) {
    Cell c;
    c.src = g;
    if (budget_spent()) {
      c.status = Status::waived;
      c.reason = budget_reason(opt_.time_budget_s);
    } else {
      try {
        fn(g, c);
      } catch (const std::exception& e) {
        c.status = Status::failed;
        c.reason = e.what();
        cudaGetLastError();
      }
    }
    cr.cells.push_back(std::move(c));
  }
  cr.steps = gpu_count();
}

}  // namespace p2pnode::agent
