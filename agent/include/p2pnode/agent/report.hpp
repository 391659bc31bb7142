// The agent's result document: data model, JSON and table rendering (host-only).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pnode/agent/gpu_processes.hpp"
#include "p2pnode/agent/interconnect.hpp"
#include "p2pnode/agent/link.hpp"
#include "p2pnode/agent/schedule.hpp"
#include "p2pnode/agent/stats.hpp"

namespace p2pnode::agent {

inline constexpr int kSchemaVersion = 1;

enum class Status { passed, failed, waived };
const char* to_string(Status s);

// One verification of copied data against the expected pattern.
struct IntegrityCheck {
  std::string label;                // e.g. "ce/address_seed", "sm/stale"
  std::uint64_t checked_bytes = 0;  // every byte of the destination region (and guards)
  std::uint64_t bad_bytes = 0;
  std::optional<std::uint64_t> first_bad_offset;  // byte offset in the destination buffer
};

// One pair (src -> dst) or one GPU (dst == -1) of a case.
struct Cell {
  int src = 0;
  int dst = -1;
  Status status = Status::passed;
  std::string reason;                                     // why waived or failed
  std::vector<std::pair<std::string, Summary>> measures;  // key with unit, e.g. "bandwidth_gbps"
  std::vector<std::pair<std::string, double>> numbers;    // plain figures, e.g. "link_theoretical_gbps"
  std::vector<IntegrityCheck> integrity;
  std::optional<int> step;                          // index of the step (round) it ran in
  int concurrent_pairs = 1;                         // pairs that ran at the same time as this one, itself included
  nlohmann::json extra = nlohmann::json::object();  // nvme cells: nvme, writer, pair_gpu, doorbell
};

// pair: src -> dst; gpu: one GPU (src); nvme: one drive and one doorbell writer (extra).
enum class CellShape { pair, gpu, nvme };

// Where a case's wall time went (host clock): filling buffers with patterns, waiting for GPUs
// between steps, the timed copies (latch, enqueue, the copies, events) and checking the data.
// The rest of duration_s is host work between them (scheduling, cells, statistics).
struct CaseTimings {
  double fill_s = 0.0;
  double sync_s = 0.0;
  double timed_s = 0.0;
  double verify_s = 0.0;
};

struct CaseResult {
  std::string key;
  std::string description;
  CellShape shape = CellShape::pair;
  Status status = Status::passed;
  std::string reason;
  double duration_s = 0.0;
  std::vector<std::string> matrix_keys;  // measure/number keys shown as matrices (median for measures)
  std::vector<Cell> cells;
  int steps = 0;  // how many steps (serial pairs or rounds) it took
  CaseTimings timings;
  // Other processes on the GPUs right after the case (only when the run watches: Report::contention).
  std::vector<GpuProcess> foreign_processes;
};

// Who else used the GPUs during the run (NVML's compute processes, our own left out), sampled
// before the first case, after each case (CaseResult::foreign_processes) and after the last.
struct Contention {
  std::string source = "none";  // "nvml" or "none"
  std::string reason;           // source none: why
  std::vector<GpuProcess> before, after;
};

struct DeviceInfo {
  int index = 0;         // index used in pairs and matrices
  int cuda_ordinal = 0;  // CUDA device ordinal
  std::string name;
  std::string uuid;        // "GPU-xxxxxxxx-..."
  std::string pci_bus_id;  // "0000:3b:00.0"
  std::uint64_t memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessor_count = 0;
  std::optional<LinkInfo> pcie_link;
};

// A point in the run's start-up, for finding where time and host memory go.
struct Phase {
  std::string name;
  double at_s = 0.0;            // seconds since the agent started
  std::uint64_t rss_bytes = 0;  // resident set at that point
  // The resident set by kind (/proc/self/status): anonymous (heap, pinned host buffers the driver
  // allocates), file-backed (the binary, libcuda), shared memory (the driver's shared mappings).
  std::uint64_t rss_anon_bytes = 0;
  std::uint64_t rss_file_bytes = 0;
  std::uint64_t rss_shmem_bytes = 0;
};

// One GPU's share of the start-up, timed in the thread that set it up, and the device memory it
// took (cudaMemGetInfo deltas on that GPU; the context's own share from NVML's figure for this
// process, which counts everything the process holds there).
struct GpuSetup {
  int gpu = 0;
  double context_s = 0.0;      // cudaSetDevice + the first runtime call: the primary context
  double buffers_s = 0.0;      // streams and every device allocation
  double module_s = 0.0;       // the first kernel launch and its wait: loads the kernels (lazy)
  double peer_access_s = 0.0;  // enabling access to every other GPU, from this GPU
  std::uint64_t module_bytes = 0;
  std::uint64_t buffer_bytes = 0;
  std::uint64_t peer_access_bytes = 0;
  std::optional<std::uint64_t> process_bytes;  // NVML: all this process holds on the GPU
  std::optional<std::uint64_t> context_bytes;  // process_bytes less modules, buffers, peer access
};

struct Report {
  std::string agent_version;
  std::string started_at;  // RFC 3339 UTC
  double duration_s = 0.0;
  int driver_version = 0;
  int runtime_version = 0;
  std::vector<DeviceInfo> devices;
  std::optional<Interconnect> interconnect;  // how the driver connects the pairs (NVML)
  std::optional<Contention> contention;      // who else used the GPUs (NVML)
  Mode mode = Mode::serial;
  std::string mode_reason;    // --mode auto: why this mode
  std::vector<Round> rounds;  // the circle rounds in rounds mode
  std::uint64_t seed = 0;
  std::uint64_t size_bytes = 0;
  std::uint64_t host_size_bytes = 0;
  std::uint64_t integrity_size_bytes = 0;
  std::uint64_t bar_size_bytes = 0;
  int iterations = 0;
  int copies = 0;
  int warmup = 0;
  int latency_accesses = 0;
  int latency_sms = 0;
  double time_budget_s = 0.0;
  std::optional<std::string> inject_corruption;
  std::vector<std::pair<std::string, std::string>> environment;  // CUDA settings in effect
  std::vector<CaseResult> cases;
  std::uint64_t peak_rss_bytes = 0;
  double setup_s = 0.0;
  std::vector<Phase> phases;
  std::vector<GpuSetup> gpu_setup;   // per GPU, in index order
  double nvml_s = 0.0;               // NVML (interconnect and process watch), beside the contexts
  std::optional<std::string> error;  // fatal error (no GPU, driver), with exit code 3
  int exit_code = 0;
};

// Fill in each case's status from its cells (failed if any cell failed; waived if every cell
// was waived and there is at least one, or the case itself was waived) and the report's exit code
// (0 passed, 1 any failure, 3 when error is set).
void finalize(Report& report);

// Median of `key` for the cell, from measures or numbers.
std::optional<double> cell_value(const Cell& cell, const std::string& key);

// Matrix [src][dst] (pair cases) or vector [gpu] (gpu cases) of medians; null where no value.
nlohmann::json matrix_json(const CaseResult& c, const std::string& key, int gpu_count);

nlohmann::json to_json(const Report& report);
nlohmann::json gpu_setup_json(const GpuSetup& g);
nlohmann::json case_timings_json(const CaseTimings& t);

// `--timings`: where the run's wall time and memory went (start-up phases with the resident set,
// per-GPU set-up and device memory, per-case split), as text for people (the agent writes it to
// stderr, so the JSON on stdout stays whole).
std::string render_timings(const Report& report);

// Human-readable tables.
std::string render_table(const Report& report);

// "2026-11-21T21:00:00Z" for a UNIX time.
std::string rfc3339_utc(std::int64_t unix_seconds);

}  // namespace p2pnode::agent
