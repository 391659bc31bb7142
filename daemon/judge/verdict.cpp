#include "judge/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/units.hpp"
#include "judge/expectations.hpp"
#include "judge/peer_denied.hpp"

namespace p2pnode::judge {

namespace {
using json = nlohmann::json;

std::string gbps(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GB/s", v);
  return b;
}

// The verdict only gets worse: passed, below_threshold, failed, error.
void raise_verdict(Judgement& j, const char* verdict) {
  static const std::vector<std::string> order = {"passed", "below_threshold", "failed", "error"};
  auto rank = [&](const std::string& v) { return std::find(order.begin(), order.end(), v) - order.begin(); };
  if (rank(verdict) > rank(j.verdict)) { j.verdict = verdict; }
}

// A GPU of the document by its PCI address, else by its index ("gpu 3", "gpu ?").
std::string agent_gpu_label(const AgentResult& r, std::optional<int> i) {
  const AgentDevice* d = i ? r.device(*i) : nullptr;
  return d ? d->pci_bus_id : std::string("gpu ") + (i ? std::to_string(*i) : "?");
}

// One cell of a case: its own failure, peer access denied (with the causes found) or disputed by
// NVML, an uncached BAR mapping, a latency above the profile's.
void judge_case_cell(Judgement& j, const AgentResult& r, const SelftestSpec& spec, const Inventory& merged,
                     const AgentCase& c, const AgentCell& cell) {
  const auto addr = [&](std::optional<int> i) { return agent_gpu_label(r, i); };
  if (cell.status == "failed" && c.status != "failed") {
    raise_verdict(j, "failed");
    const std::string who = !cell.nvme.empty()
                                ? cell.nvme + " (" + cell.writer + " writer)"
                                : addr(cell.src ? cell.src : cell.gpu) + (cell.dst ? "→" + addr(cell.dst) : "");
    j.reasons.push_back(c.key + " " + who + " failed" + (cell.reason.empty() ? "" : ": " + cell.reason));
  }
  if (c.key == "peer_access" && cell.src && cell.dst && cell.peer_access && *cell.peer_access == 0) {
    const auto why = explain_denied_peer_access(r, *cell.src, *cell.dst, merged);
    std::string line = "peer access " + addr(cell.src) + "→" + addr(cell.dst) + " denied: ";
    if (why.empty()) { line += "no cause found in the evidence (GPU models, IOMMU, BAR size, driver, root complex)"; }
    for (std::size_t k = 0; k < why.size(); ++k) { line += (k ? "; " : "") + why[k]; }
    if (const auto d = nvml_cuda_disagreement(r, *cell.src, *cell.dst, false)) { line += "; " + *d; }
    j.reasons.push_back(line);
    j.load_independent_failure = true;
  }
  if (c.key == "peer_access" && cell.src && cell.dst && cell.peer_access && *cell.peer_access == 1) {
    if (const auto d = nvml_cuda_disagreement(r, *cell.src, *cell.dst, true)) {
      j.notes.push_back("peer access " + addr(cell.src) + "→" + addr(cell.dst) + ": " + *d);
    }
  }
  // Through a write-combined mapping CPU stores are many times faster than loads (seed 004); as
  // fast or slower, the mapping is uncached (PAT off, or the driver refused write combining).
  if (c.key == "bar_copy" && cell.gpu && cell.bar_write_gbps && cell.bar_read_gbps &&
      *cell.bar_write_gbps <= *cell.bar_read_gbps) {
    raise_verdict(j, "below_threshold");
    char b[160];
    std::snprintf(b, sizeof b, ": CPU stores %.2f GB/s, no faster than loads %.2f GB/s", *cell.bar_write_gbps,
                  *cell.bar_read_gbps);
    j.reasons.push_back("bar_copy " + addr(cell.gpu) + b +
                        ": the BAR mapping is not write-combined (is PAT on? gdrcopy's mapping_type says which)");
  }
  if (c.key == "latency" && cell.src && cell.dst && cell.latency_ns && spec.max_latency) {
    const double limit_ns = static_cast<double>(spec.max_latency->count());
    if (*cell.latency_ns > limit_ns) {
      raise_verdict(j, "below_threshold");
      char b[128];
      std::snprintf(b, sizeof b, ": %.0f ns, above the profile's %.0f ns", *cell.latency_ns, limit_ns);
      j.reasons.push_back("latency " + addr(cell.src) + "→" + addr(cell.dst) + b);
    }
  }
}

struct BandwidthThreshold {
  std::optional<double> limit_gbps;
  std::string source;  // "the profile's min_bandwidth.NV", "0.80 of the expected"
};

// The profile's figure for the pair's class (NV18, then NV; PHB …), then "any"; else a
// fraction of the expected figure. Host copies have only the fraction.
BandwidthThreshold bandwidth_threshold(const SelftestSpec& spec, const CellExpectation& e) {
  BandwidthThreshold t;
  if (e.case_key == "bar_copy" && e.direction == "h2d") {
    if (auto it = spec.min_bandwidth.find("BAR"); it != spec.min_bandwidth.end()) {
      t.limit_gbps = it->second.gbps();
      t.source = "the profile's min_bandwidth.BAR";
    }
  } else if (!e.peer_gpu.empty()) {
    for (const std::string& k : {e.link, e.link.rfind("NV", 0) == 0 ? std::string("NV") : e.link, std::string("any")}) {
      if (auto it = spec.min_bandwidth.find(k); it != spec.min_bandwidth.end()) {
        // The bidirectional figure is two directions at once.
        t.limit_gbps = it->second.gbps() * (e.direction == "bidirectional" ? 2 : 1);
        t.source = "the profile's min_bandwidth." + k;
        break;
      }
    }
  }
  if (!t.limit_gbps && e.expected_gbps) {
    t.limit_gbps = *e.expected_gbps * spec.min_fraction_of_expected;
    char b[64];
    std::snprintf(b, sizeof b, "%.2f of the expected", spec.min_fraction_of_expected);
    t.source = b;
  }
  return t;
}

// A bandwidth cell against its threshold: a row of j.expectations, and a reason when below.
void judge_bandwidth_cell(Judgement& j, const SelftestSpec& spec, const CellExpectation& e) {
  json row = to_json(e);
  const auto [threshold, source] = bandwidth_threshold(spec, e);
  row["threshold_gbps"] = threshold ? json(std::round(*threshold * 1000) / 1000) : json();
  row["threshold_source"] = threshold ? json(source) : json();
  const bool below = threshold && e.measured_gbps < *threshold;
  row["below_threshold"] = below;
  if (below) {
    raise_verdict(j, "below_threshold");
    std::string why = e.key() + " (" + e.link + "): " + gbps(e.measured_gbps);
    if (e.expected_gbps) {
      char b[96];
      std::snprintf(b, sizeof b, ", %.0f %% of the expected %.1f GB/s", 100 * *e.ratio(), *e.expected_gbps);
      why += b;
    }
    why += ", below " + gbps(*threshold) + " (" + source + ")";
    if (!e.narrowest.empty()) { why += "; narrowest link " + e.narrowest; }
    j.reasons.push_back(why);
  }
  j.expectations.push_back(std::move(row));
}

// The whole run: corrupted bytes (the document's count or the cells' sum, the larger), no case that
// ran, a failure the agent reported that no case explains.
void judge_run_totals(Judgement& j, const AgentResult& r, const SelftestSpec& spec, std::uint64_t cell_bad) {
  const std::uint64_t bad_bytes = std::max(r.integrity_bad_bytes, cell_bad);
  if (bad_bytes > spec.max_integrity_errors) {
    raise_verdict(j, "failed");
    j.load_independent_failure = true;
    j.reasons.push_back("integrity: " + std::to_string(bad_bytes) +
                        " corrupted byte(s) in P2P copies (the profile allows " +
                        std::to_string(spec.max_integrity_errors) + ")");
  }
  if (r.cases_passed == 0 && j.verdict == "passed") {
    raise_verdict(j, "below_threshold");
    j.reasons.push_back("no self-test case ran: all " + std::to_string(r.cases_waived) + " were waived");
  }
  if (r.status == "failed" && j.verdict == "passed") {
    raise_verdict(j, "failed");
    j.reasons.push_back("the agent reported a failure (" + std::to_string(r.cases_failed) + " case(s) failed)");
  }
}
}  // namespace

Judgement judge_agent_result(const AgentResult& r, const SelftestSpec& spec, const Inventory& inv) {
  Judgement j;
  if (r.status == "error") {
    raise_verdict(j, "error");
    j.reasons.push_back("the agent could not run its tests: " +
                        (r.error.empty() ? std::string("no reason given") : r.error));
    return j;
  }
  // The pair's class as the driver sees it (NV18 …), and what each cell should reach.
  Inventory merged = inv;
  merge_interconnects(merged, r);
  const auto cells = expectations(r, merged);
  std::uint64_t cell_bad = 0;
  for (const auto& c : r.cases) {
    if (c.status == "failed") {
      raise_verdict(j, "failed");
      j.reasons.push_back(c.key + " failed" + (c.reason.empty() ? "" : ": " + c.reason));
    }
    for (const auto& cell : c.cells) {
      cell_bad += cell.integrity_bad_bytes;
      judge_case_cell(j, r, spec, merged, c, cell);
    }
  }
  for (const auto& e : cells) { judge_bandwidth_cell(j, spec, e); }
  judge_run_totals(j, r, spec, cell_bad);
  return j;
}

AgentRun judge_agent_run(sys::CommandResult process, std::int64_t started_unix, double duration_s,
                         const std::string& path, std::chrono::nanoseconds time_limit, const SelftestSpec& spec,
                         const Inventory& inv) {
  AgentRun run;
  run.process = std::move(process);
  run.started_unix = started_unix;
  run.duration_s = duration_s;
  auto& j = run.judgement;
  const auto& p = run.process;
  auto stderr_tail = [&] {
    std::string e = p.err.size() > 300 ? p.err.substr(p.err.size() - 300) : p.err;
    while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) { e.pop_back(); }
    return e.empty() ? std::string() : " (stderr: " + e + ")";
  };
  if (p.start_failed) {
    j = {"error", {"the agent " + path + " could not be started: " + p.describe()}};
    return run;
  }
  if (p.timed_out) {
    j = {"error",
         {"the agent hung: no result within " + format_duration(time_limit) + "; its process group was killed"}};
    return run;
  }
  if (!p.exited) {
    j = {"error", {"the agent crashed: " + p.describe() + stderr_tail()}};
    return run;
  }
  if (p.out_truncated || p.out.size() > kMaxAgentOutputBytes) {
    j = {"error", {"the agent printed more than " + std::to_string(kMaxAgentOutputBytes) + " bytes"}};
    return run;
  }
  auto parsed = parse_agent_result(p.out);
  if (!parsed) {
    j = {"error", {parsed.error().message + "; agent " + p.describe() + stderr_tail()}};
    return run;
  }
  if (parsed->exit_code != p.exit_code) {
    j = {"error",
         {"the agent exited " + std::to_string(p.exit_code) + " but its document says exit_code " +
          std::to_string(parsed->exit_code)}};
    return run;
  }
  j = judge_agent_result(*parsed, spec, inv);
  run.result = std::move(parsed).value();
  return run;
}

}  // namespace p2pnode::judge
