// The self-test cases: each fills, copies or chases pointers between GPUs through the Agent
// and returns one cell per pair (or per GPU); every copied byte is verified on the destination.
#include "agent.hpp"
#include "p2pnode/agent/bar/bar_copy.hpp"

namespace p2pnode::agent {
namespace {

std::string need_two_gpus(const Agent& a) {
  if (a.gpu_count() < 2) { return "needs at least 2 GPUs, found " + std::to_string(a.gpu_count()); }
  return {};
}

std::string need_peer_pair(const Agent& a) {
  if (auto why = need_two_gpus(a); !why.empty()) { return why; }
  for (const auto& p : a.selected()) {
    if (a.peer_ok(p.src, p.dst)) { return {}; }
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
      if (s == d) { continue; }
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
      // n copies: the copy engine takes them as one batch, the SM copy in one launch (as
      // nvbandwidth's copy kernel loops), so a sample pays the per-copy cost or the launch ramp
      // and tail once.
      auto copies_of = [dst, src, size, sms, engine](cudaStream_t s, int n) {
        if (n <= 0) { return; }
        if (engine == Engine::ce) {
          copy_n(dst, src, size, n, s);
        } else {
          CK(gpu::launch_sm_copy(dst, src, size, sms, s, n));
        }
      };
      const int warm = a.opt().warmup;
      const int copies = a.opt().copies;
      op.warm = [copies_of, warm](cudaStream_t s) { copies_of(s, warm); };
      op.timed = [copies_of, copies](cudaStream_t s) { copies_of(s, copies); };
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
      for (double ms : ops[k].ms) { bw.push_back(gbps(size, a.opt().copies, ms)); }
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
        op.warm = [=](cudaStream_t s) { copy_n(dst, src, size, warm, s); };
        op.timed = [=](cudaStream_t s) { copy_n(dst, src, size, copies, s); };
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

// SMs the latency sample is spread over on GPU g: --latency-sms, 0 (the default) for every SM.
int latency_targets(Agent& a, int g) {
  const int sms = a.gpu(g).prop.multiProcessorCount;
  const int want = a.opt().latency_sms > 0 ? a.opt().latency_sms : sms;
  return std::max(1, std::min({want, sms, static_cast<int>(kLatencySlots)}));
}

void run_latency(Agent& a, CaseResult& cr) {
  cr.matrix_keys = {"latency_ns"};
  const auto steps = unidirectional_steps(a.gpu_count(), a.opt().mode, a.selected());
  const int accesses = a.opt().latency_accesses;
  constexpr std::size_t kNodes = kLatencyBytes / 8;  // the chain: node i -> node i + 16
  a.run_pair_steps(cr, steps, true, [&](const Round& pairs, int) {
    // Rewrite each chain on its own GPU first, so that it sits in that GPU's L2 as it would after
    // a long chase (the bandwidth cases evicted it); the first sample then matches the others.
    for (const auto& p : pairs) {
      a.set_device(p.dst);
      CK(gpu::launch_chain_init(a.gpu(p.dst).lat, kLatencyBytes, a.gpu(p.dst).stream[0]));
    }
    for (const auto& p : pairs) { a.sync(p.dst); }
    std::vector<TimedOp> ops;
    for (const auto& p : pairs) {
      TimedOp op;
      op.gpu = p.src;  // the GPU that runs the loads
      op.stream = a.gpu(p.src).stream[0];
      const char* chain = a.gpu(p.dst).lat;  // memory of the peer
      unsigned long long* sink = a.gpu(p.src).sink;
      unsigned long long* slots = a.gpu(p.src).lat_ns;
      // Every SM chases in turn (nvbandwidth averages over every SM too: the SMs' distances to the
      // link differ by several percent), one launch each, timed inside the kernel; each launch
      // starts where the last one stopped, so no SM meets lines it loaded before.
      const int sms = a.gpu(p.src).prop.multiProcessorCount;
      const int targets = latency_targets(a, p.src);
      const int per_target = std::max(accesses / targets, 1);
      auto next_node = std::make_shared<std::size_t>(0);
      op.warm = [=](cudaStream_t s) { CK(gpu::launch_chase(chain, std::max(accesses / 8, 16), sink, sms, 0, s)); };
      op.timed = [=](cudaStream_t s) {
        for (int t = 0; t < targets; ++t) {
          const char* start = chain + (*next_node % kNodes) * 8;
          *next_node += static_cast<std::size_t>(per_target) * 16;
          CK(gpu::launch_chase(start, per_target, sink, sms, t * sms / targets, s, slots + t));
        }
      };
      ops.push_back(std::move(op));
    }
    // One sample at a time, so that each sample's per-launch times can be read back before the
    // next overwrites them.
    std::vector<std::vector<double>> ns(pairs.size());
    for (int it = 0; it < a.opt().iterations; ++it) {
      for (auto& op : ops) { op.ms.clear(); }
      a.time_ops(ops, 1, false);  // timed inside the kernel: no latch needed
      for (std::size_t k = 0; k < pairs.size(); ++k) {
        const int src = pairs[k].src;
        const int targets = latency_targets(a, src);
        const int done = std::max(accesses / targets, 1) * targets;
        std::vector<unsigned long long> got(static_cast<std::size_t>(targets));
        a.set_device(src);
        CK(cudaMemcpy(got.data(), a.gpu(src).lat_ns, got.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        unsigned long long sum = 0;
        for (auto v : got) { sum += v; }
        ns[k].push_back(static_cast<double>(sum) / done);
      }
    }
    std::vector<Cell> cells;
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      Cell c;
      c.src = pairs[k].src;
      c.dst = pairs[k].dst;
      c.measures.emplace_back("latency_ns", summary_of(ns[k]));
      c.numbers.emplace_back("latency_sms", static_cast<double>(latency_targets(a, c.src)));
      cells.push_back(std::move(c));
    }
    return cells;
  });
}

void run_host_device(Agent& a, CaseResult& cr) {
  cr.shape = CellShape::gpu;
  cr.matrix_keys = {"h2d_bandwidth_gbps", "d2h_bandwidth_gbps", "link_theoretical_gbps"};
  const std::size_t hs = a.host_size();
  a.begin_host_phase();
  char* host = a.host_buf();
  a.run_gpu_cells(cr, [&](int g, Cell& c) {
    a.take_for_host_phase(g);
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
      void* to = d2h ? static_cast<void*>(host) : static_cast<void*>(dev_dst);
      const void* from = d2h ? static_cast<const void*>(dev_src) : static_cast<const void*>(host);
      op.warm = [=](cudaStream_t s) { copy_n(to, from, hs, warm, s); };
      op.timed = [=](cudaStream_t s) { copy_n(to, from, hs, copies, s); };
      return op;
    };
    std::vector<TimedOp> d2h{make(true)};
    a.time_ops(d2h, a.opt().iterations);
    std::vector<TimedOp> h2d{make(false)};
    a.time_ops(h2d, a.opt().iterations);
    std::vector<double> up;
    std::vector<double> down;
    for (double ms : h2d[0].ms) { up.push_back(gbps(hs, copies, ms)); }
    for (double ms : d2h[0].ms) { down.push_back(gbps(hs, copies, ms)); }
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
  });
}

// The integrity case's engines: which copy, and whether the source or the destination issues it.
struct IntegrityEngine {
  const char* name;
  Engine engine;
  bool issuer_is_src;
};
constexpr std::array<IntegrityEngine, 4> kIntegrityEngines{{{"ce_write", Engine::ce, true},
                                                            {"ce_read", Engine::ce, false},
                                                            {"sm_write", Engine::sm, true},
                                                            {"sm_read", Engine::sm, false}}};

// One pass of one engine over buffers of `size` bytes: its name and where the copy goes.
struct IntegrityPass {
  std::size_t e = 0;  // index into kIntegrityEngines
  int pass = 0;       // 0 address_seed, 1 stale, 2 partial_offset
  const char* name = "";
  std::size_t src_off = 0;
  std::size_t dst_off = 0;
  std::size_t len = 0;
  std::vector<std::uint32_t> seeds;    // per pair of the step
  std::vector<std::uint32_t> poisons;  // per pair of the step
};

IntegrityPass integrity_pass_geometry(std::size_t e, int pass, std::size_t size) {
  const Engine engine = kIntegrityEngines[e].engine;
  IntegrityPass ip;
  ip.e = e;
  ip.pass = pass;
  ip.name = pass == 0 ? "address_seed" : (pass == 1 ? "stale" : "partial_offset");
  // Offsets: CE takes any byte offset; the SM copy moves 16-byte words.
  ip.src_off = pass == 2 ? (engine == Engine::ce ? 12 : 16) : 0;
  ip.dst_off = pass == 2 ? (engine == Engine::ce ? 4096 + 7 : 4096 + 32) : 0;
  ip.len = pass == 2 ? (engine == Engine::ce ? size - 8192 - 13 : size - 8192) : size;
  return ip;
}

// Each pair's source filled with the pass's seed, its destination (but in the stale pass) with poison.
void fill_integrity_pass(Agent& a, const Round& pairs, IntegrityPass& ip, std::size_t size) {
  ip.seeds.assign(pairs.size(), 0);
  ip.poisons.assign(pairs.size(), 0);
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const Pair& p = pairs[k];
    ip.seeds[k] = mix32(a.seed(), static_cast<std::uint64_t>(p.src * 1000 + p.dst), 100 + ip.e, ip.pass);
    // The stale pass does not poison: the destination still holds the previous pass's
    // data, and the whole buffer must now match the new seed.
    ip.poisons[k] = mix32(a.seed(), static_cast<std::uint64_t>(p.src * 1000 + p.dst), 200 + ip.e, ip.pass);
    a.fill(p.src, a.gpu(p.src).buf_a, size, ip.seeds[k]);
    if (ip.pass != 1) { a.fill(p.dst, a.gpu(p.dst).buf_b, size, ip.poisons[k]); }
  }
}

void sync_integrity_pairs(Agent& a, const Round& pairs) {
  for (const auto& p : pairs) {
    a.sync(p.src);
    a.sync(p.dst);
  }
}

// Each pair's copy, queued by the engine's issuer (and, TEST ONLY, the injected corruption).
void copy_integrity_pass(Agent& a, const Round& pairs, const IntegrityPass& ip, std::size_t size) {
  const IntegrityEngine& eng = kIntegrityEngines[ip.e];
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const Pair& p = pairs[k];
    const int issuer = eng.issuer_is_src ? p.src : p.dst;
    a.set_device(issuer);
    cudaStream_t s = a.gpu(issuer).stream[0];
    char* dst = a.gpu(p.dst).buf_b;
    const char* src = a.gpu(p.src).buf_a;
    if (eng.engine == Engine::ce) {
      CK(cudaMemcpyAsync(dst + ip.dst_off, src + ip.src_off, ip.len, cudaMemcpyDeviceToDevice, s));
    } else {
      CK(gpu::launch_sm_copy(dst + ip.dst_off, src + ip.src_off, ip.len, a.gpu(issuer).prop.multiProcessorCount, s));
    }
    if (a.inject() && *a.inject() == p && ip.e == 0 && ip.pass == 0) {
      // TEST ONLY: skew one region of this copy by 64 bytes (a wrong-address copy).
      const std::size_t off = std::min<std::size_t>(1024 * 1024, size / 2);
      CK(cudaMemcpyAsync(dst + off, src + off + 64, kInjectBytes, cudaMemcpyDeviceToDevice, s));
    }
  }
}

// Every byte of each pair's destination buffer checked on the destination GPU.
void verify_integrity_pass(Agent& a, const Round& pairs, const IntegrityPass& ip, std::size_t size,
                           std::vector<Cell>& cells) {
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const Pair& p = pairs[k];
    gpu::VerifySpec spec;
    spec.dst = a.gpu(p.dst).buf_b;
    spec.dst_bytes = size;
    spec.region_off = ip.dst_off;
    spec.region_len = ip.len;
    spec.src_off = ip.src_off;
    spec.seed = ip.seeds[k];
    spec.poison_seed = ip.poisons[k];
    cells[k].integrity.push_back(a.verify(p.dst, spec, std::string(kIntegrityEngines[ip.e].name) + "/" + ip.name));
  }
}

// One step's pairs through every engine and pass; a cell per pair with its bad bytes.
std::vector<Cell> run_integrity_step(Agent& a, const Round& pairs, std::size_t size) {
  std::vector<Cell> cells(pairs.size());
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    cells[k].src = pairs[k].src;
    cells[k].dst = pairs[k].dst;
  }
  for (std::size_t e = 0; e < kIntegrityEngines.size(); ++e) {
    for (int pass = 0; pass < 3; ++pass) {
      IntegrityPass ip = integrity_pass_geometry(e, pass, size);
      fill_integrity_pass(a, pairs, ip, size);
      sync_integrity_pairs(a, pairs);
      copy_integrity_pass(a, pairs, ip, size);
      sync_integrity_pairs(a, pairs);
      verify_integrity_pass(a, pairs, ip, size, cells);
    }
  }
  for (auto& c : cells) {
    std::uint64_t bad = 0;
    for (const auto& ic : c.integrity) { bad += ic.bad_bytes; }
    c.numbers.emplace_back("bad_bytes", static_cast<double>(bad));
    mark_integrity(c);
  }
  return cells;
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
  a.run_pair_steps(cr, steps, true, [&](const Round& pairs, int) { return run_integrity_step(a, pairs, size); });
}

}  // namespace

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
       "Peer load latency by pointer chase (2 MiB chain, 128-byte stride, as nvbandwidth), every SM in turn "
       "(--latency-sms), each chase timed inside the kernel; "
       "row: the GPU that loads, column: the GPU whose memory is read",
       need_peer_pair, run_latency},
      {"integrity",
       "Data integrity on every ordered pair: CE push, CE pull, SM stores, SM loads; address-derived patterns "
       "mixed with a per-run seed, a stale-data pass and an unaligned partial copy inside guards; every byte "
       "checked on the destination GPU",
       need_peer_pair, run_integrity},
      {bar::kCaseKey,
       "CPU copies to and from each GPU's memory through gdrcopy's BAR mapping (gdrdrv, or dma-buf on a CUDA 13.3 "
       "driver): latency of 4 B to 64 KiB copies and bandwidth each way as copylat and copybw measure them, every "
       "byte checked against the copy engine's view; write-combined stores are fast, uncached loads slow",
       bar_copy_filter, run_bar_copy},
      {nvme::kCaseKey, nvme::kCaseDescription, always, run_nvme_doorbell, true},
      {"host_device_bandwidth",
       "Host<->device copy-engine bandwidth per GPU (pinned memory) beside the PCIe link's theoretical figure "
       "from sysfs; the data goes down and back up and is verified. Runs last, with one GPU's context fewer than the "
       "pair cases (three GPUs or more), so "
       "its host buffer does not add to the memory of every context at once",
       always, run_host_device},
  };
  return cases;
}

}  // namespace p2pnode::agent
