#include "p2pnode/agent/options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

namespace p2pnode::agent {

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::uint64_t value = 0;
  const auto res = std::from_chars(text.data(), text.data() + text.size(), value);
  if (res.ec != std::errc{} || res.ptr == text.data()) { return std::nullopt; }
  std::string unit(res.ptr, text.data() + text.size());
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::uint64_t mult = 0;
  if (unit.empty() || unit == "m" || unit == "mib" || unit == "mb") {
    mult = kMiB;
  } else if (unit == "b") {
    mult = 1;
  } else if (unit == "k" || unit == "kib" || unit == "kb") {
    mult = 1024;
  } else if (unit == "g" || unit == "gib" || unit == "gb") {
    mult = 1024 * kMiB;
  } else {
    return std::nullopt;
  }
  constexpr std::uint64_t kMax = 64ULL * 1024ULL * kMiB;
  if (value == 0 || value > kMax / mult) { return std::nullopt; }
  return value * mult;
}

namespace {

std::vector<std::string> split_commas(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream ss(item);
    std::string part;
    while (std::getline(ss, part, ',')) {
      if (!part.empty()) { out.push_back(part); }
    }
  }
  return out;
}

// The options as typed, before they are checked and turned into Options.
struct AgentOptionText {
  std::string format = "json";
  bool json_flag = false;
  std::vector<std::string> cases;
  std::string size = "512MiB";
  std::string host_size = "32MiB";
  std::string integrity_size = "64MiB";
  std::string bar_size = "8MiB";
  std::string gdrapi;
  std::string mode = "auto";
  std::string inject;
  std::uint64_t seed = 0;
  CLI::Option* seed_opt = nullptr;    // whether --seed was given
  CLI::Option* inject_opt = nullptr;  // whether --inject-corruption was given (an empty text is refused)
  bool show_version = false;
};

// Every option, in the order --help lists them: plain values straight into o, the rest as text.
void add_agent_options(CLI::App& app, Options& o, AgentOptionText& t) {
  app.add_option("--format", t.format, "Output: json (default) or table")->check(CLI::IsMember({"json", "table"}));
  app.add_flag("--json", t.json_flag, "Same as --format json");
  app.add_flag("--list", o.list, "List the cases and exit");
  app.add_flag("--processes", o.processes,
               "Print the compute processes on every GPU (NVML; no CUDA context, no GPU work) as JSON and exit");
  app.add_option("--cases", t.cases, "Cases to run, comma separated (default: all)");
  app.add_option("--pairs", o.pairs, "Ordered GPU pairs SRC:DST, comma separated, or 'all'");
  app.add_option("--size", t.size, "Peer bandwidth buffer (MiB, or with B/KiB/MiB/GiB), default 512MiB");
  app.add_option("--host-size", t.host_size, "Host<->device buffer, default 32MiB");
  app.add_option("--integrity-size", t.integrity_size, "Integrity-case buffer, default 64MiB");
  app.add_option("--bar-size", t.bar_size,
                 "bar_copy: GPU buffer mapped through the BAR, default 8MiB (pinned in BAR1)");
  app.add_option("--gdrapi", t.gdrapi,
                 "bar_copy: the libgdrapi to open (a path), default libgdrapi.so.2 from the linker's path");
  app.add_option("--iterations", o.iterations, "Timed samples per measurement (median reported), default 3")
      ->check(CLI::Range(1, 1000));
  app.add_option("--copies", o.copies, "Copies per timed sample, default 12")->check(CLI::Range(1, 256));
  app.add_option("--warmup", o.warmup, "Untimed warm-up copies before the samples, default 1")
      ->check(CLI::Range(0, 64));
  app.add_option("--latency-accesses", o.latency_accesses, "Dependent loads per latency sample, default 8192")
      ->check(CLI::Range(16, 10000000));
  app.add_option("--latency-sms", o.latency_sms,
                 "SMs the latency chase is spread over, one launch each (0, the default: every SM)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--time-budget", o.time_budget_s, "Seconds; what is left when spent is waived (0: none)")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--mode", t.mode,
                 "serial: one pair at a time; rounds: disjoint pairs at the same time; auto (default): rounds when "
                 "every pair is joined by NVLink, else serial")
      ->check(CLI::IsMember({"serial", "rounds", "auto"}));
  t.seed_opt = app.add_option("--seed", t.seed, "Pattern seed (default: drawn per run)");
  t.inject_opt = app.add_option("--inject-corruption", t.inject, "TEST ONLY: skew one integrity copy of pair SRC:DST");
  app.add_option("--nvme", o.nvme,
                 "nvme_doorbell: bdf=0000:0b:00.0,serial=S[,model=M][,gpu=0000:0a:00.0] (repeatable; default: every "
                 "NVMe on vfio-pci with a serial in /var/lib/p2pnode/nvme-serials.json)");
  app.add_option("--writer", o.writer, "nvme_doorbell: who writes the doorbell: host, gpu or both (default)")
      ->check(CLI::IsMember({"host", "gpu", "both"}));
  app.add_option("--nvme-ready-timeout-ms", o.nvme_ready_timeout_ms, "nvme_doorbell: longest wait for CSTS.RDY")
      ->check(CLI::Range(1, 600000));
  app.add_option("--nvme-completion-timeout-ms", o.nvme_completion_timeout_ms,
                 "nvme_doorbell: longest wait for the Identify completion")
      ->check(CLI::Range(1, 60000));
  app.add_flag("--no-hold", o.no_hold,
               "DEBUG: do not hold the streams with a spin kernel before timed copies (timing is less exact; "
               "for compute-sanitizer, which serializes launches)");
  app.add_flag("--timings", o.timings,
               "Also write where the run's time and memory went (start-up phases, per GPU, per case) to stderr");
  app.add_flag("--version", t.show_version, "Print the version and exit");
}

// The four buffer sizes into o; else why not, for the usage error.
std::optional<std::string> take_agent_sizes(const AgentOptionText& t, Options& o) {
  const auto s = parse_size(t.size);
  const auto hs = parse_size(t.host_size);
  const auto is = parse_size(t.integrity_size);
  const auto bs = parse_size(t.bar_size);
  if (!s || !hs || !is || !bs) { return "sizes take a number with an optional B, KiB, MiB or GiB suffix (max 64 GiB)"; }
  if (*s < 64 * 1024 || *is < 64 * 1024 || *hs < 4096 || *bs < 64 * 1024) {
    return "--size, --integrity-size and --bar-size must be at least 64KiB, --host-size at least 4KiB";
  }
  if (*bs % (64 * 1024) != 0) {
    return "--bar-size must be a whole number of 64KiB GPU pages (gdrcopy pins and maps in those)";
  }
  o.bar_size_bytes = *bs;
  if (!t.gdrapi.empty()) { o.gdrapi = {t.gdrapi}; }
  o.size_bytes = *s;
  o.host_size_bytes = *hs;
  o.integrity_size_bytes = *is;
  return std::nullopt;
}

// The text options checked and turned into o, in the order the usage errors are looked for;
// else why not.
std::optional<std::string> take_agent_option_text(const AgentOptionText& t, const std::vector<std::string>& known_cases,
                                                  Options& o) {
  o.format = (t.format == "table" && !t.json_flag) ? Format::table : Format::json;
  o.mode = t.mode == "rounds" ? Mode::rounds : Mode::serial;
  o.mode_auto = t.mode == "auto";
  o.cases = split_commas(t.cases);
  for (const auto& c : o.cases) {
    if (std::find(known_cases.begin(), known_cases.end(), c) == known_cases.end()) {
      return "unknown case '" + c + "' (see --list)";
    }
  }
  if (auto why = take_agent_sizes(t, o)) { return why; }
  if (t.seed_opt->count() > 0) { o.seed = t.seed; }
  if (t.inject_opt->count() > 0) {
    std::string err;
    // Validate the shape only; the GPU count is not known yet. "all" and an empty text are refused
    // before parse_pairs, which would spell them out as every pair of 2^20 GPUs.
    if (t.inject.empty() || t.inject == "all" || t.inject.find(',') != std::string::npos ||
        !parse_pairs(t.inject, 1 << 20, &err)) {
      return "--inject-corruption takes one SRC:DST pair";
    }
    o.inject_corruption = t.inject;
  }
  if (o.pairs.empty()) { return "--pairs: an empty list (give SRC:DST[,SRC:DST...] or all)"; }
  if (o.pairs != "all") {
    std::string err;
    if (!parse_pairs(o.pairs, 1 << 20, &err)) { return "--pairs: " + err; }
  }
  return std::nullopt;
}

}  // namespace

ParseOutcome parse_options(int argc, const char* const* argv, const std::vector<std::string>& known_cases,
                           std::string_view version) {
  Options o;
  CLI::App app{
      "p2pnode-agent: GPU peer-to-peer self-tests (bandwidth, latency, data integrity).\n"
      "Prints one JSON document on stdout. Exit codes: 0 all ran and passed, 1 a failure or\n"
      "integrity error, 2 usage, 3 no GPU or driver.",
      "p2pnode-agent"};
  AgentOptionText text;
  add_agent_options(app, o, text);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) { return {std::nullopt, 0, app.help()}; } catch (const CLI::ParseError& e) {
    return {std::nullopt, 2, std::string("usage error: ") + e.what() + "\n" + "run with --help for the options"};
  }
  if (text.show_version) { return {std::nullopt, 0, std::string("p2pnode-agent ") + std::string(version)}; }
  if (auto why = take_agent_option_text(text, known_cases, o)) { return {std::nullopt, 2, "usage error: " + *why}; }
  return {o, 0, {}};
}

}  // namespace p2pnode::agent
