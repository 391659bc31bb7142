// Command-line options of p2pnode-agent (host-only).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "p2pnode/agent/schedule.hpp"

namespace p2pnode::agent {

enum class Format { json, table };

inline constexpr std::uint64_t kMiB = 1024ULL * 1024ULL;

struct Options {
  Format format = Format::json;
  bool list = false;
  bool processes = false;                          // --processes: print who else uses the GPUs (NVML) and exit; no CUDA
  std::vector<std::string> cases;                  // empty: the default cases
  std::string pairs = "all";                       // "all" or "SRC:DST,..."
  std::uint64_t size_bytes = 512 * kMiB;           // peer bandwidth buffer
  std::uint64_t host_size_bytes = 32 * kMiB;       // host<->device buffer
  std::uint64_t integrity_size_bytes = 64 * kMiB;  // integrity-case buffer
  std::uint64_t bar_size_bytes = 8 * kMiB;         // bar_copy: the GPU buffer the CPU maps (BAR1)
  std::vector<std::string> gdrapi;                 // bar_copy: libgdrapi to open; empty: the default names
  int iterations = 3;                              // timed samples per measurement; the median is reported
  int copies = 12;                                 // copies per timed sample
  int warmup = 1;                                  // untimed copies queued once before the samples
  int latency_accesses = 8192;                     // dependent loads per latency sample
  int latency_sms = 0;         // SMs (one launch each) the latency sample is spread over; 0: every SM
  double time_budget_s = 0.0;  // 0: none; cases or pairs left when it is spent are waived
  Mode mode = Mode::serial;
  bool mode_auto = true;                         // --mode auto (the default): rounds on all-NVLink boxes, else serial
  std::optional<std::uint64_t> seed;             // default: drawn per run
  std::optional<std::string> inject_corruption;  // test-only: "SRC:DST"
  bool timings = false;                          // --timings: the time and memory breakdown on stderr
  bool no_hold = false;                          // debug: no spin kernel holding the streams (for memory checkers)
  // nvme_doorbell (opt-in: runs only when --cases names it)
  std::vector<std::string> nvme;  // "bdf=…,serial=…[,model=…][,gpu=…]"; none: discovered
  std::string writer = "both";    // host, gpu or both
  int nvme_ready_timeout_ms = 10000;
  int nvme_completion_timeout_ms = 2000;
};

struct ParseOutcome {
  std::optional<Options> options;  // set when the program should run
  int exit_code = 0;               // when options is empty: 0 for --help/--version, 2 for usage
  std::string message;             // text to print (help, version or the usage error)
};

// Parse argv. known_cases: the case keys the program has (for --cases validation).
ParseOutcome parse_options(int argc, const char* const* argv, const std::vector<std::string>& known_cases,
                           std::string_view version);

// "512" (MiB, as nvbandwidth), "512MiB", "64M", "1GiB", "4096B", "2K". nullopt when malformed,
// zero or above 64 GiB.
std::optional<std::uint64_t> parse_size(std::string_view text);

}  // namespace p2pnode::agent
