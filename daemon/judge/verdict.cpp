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
}  // namespace

Judgement judge_agent_result(const AgentResult& r, const SelftestSpec& spec, const Inventory& inv) {
  Judgement j;
  auto worse = [&](const char* verdict) {
    static const std::vector<std::string> order = {"passed", "below_threshold", "failed", "error"};
    auto rank = [&](const std::string& v) { return std::find(order.begin(), order.end(), v) - order.begin(); };
    if (rank(verdict) > rank(j.verdict)) j.verdict = verdict;
  };
  if (r.status == "error") {
    worse("error");
    j.reasons.push_back("the agent could not run its tests: " + (r.error.empty() ? std::string("no reason given") : r.error));
    return j;
  }
  auto addr = [&](std::optional<int> i) {
    const AgentDevice* d = i ? r.device(*i) : nullptr;
    return d ? d->pci_bus_id : std::string("gpu ") + (i ? std::to_string(*i) : "?");
  };
  // The pair's class as the driver sees it (NV18 …), and what each cell should reach.
  Inventory merged = inv;
  merge_interconnects(merged, r);
  const auto cells = expectations(r, merged);
  std::uint64_t bad_bytes = r.integrity_bad_bytes;
  std::uint64_t cell_bad = 0;
  for (const auto& c : r.cases) {
    if (c.status == "failed") {
      worse("failed");
      j.reasons.push_back(c.key + " failed" + (c.reason.empty() ? "" : ": " + c.reason));
    }
    for (const auto& cell : c.cells) {
      cell_bad += cell.integrity_bad_bytes;
      if (cell.status == "failed" && c.status != "failed") {
        worse("failed");
        const std::string who = !cell.nvme.empty() ? cell.nvme + " (" + cell.writer + " writer)"
                                                   : addr(cell.src ? cell.src : cell.gpu) + (cell.dst ? "→" + addr(cell.dst) : "");
        j.reasons.push_back(c.key + " " + who + " failed" + (cell.reason.empty() ? "" : ": " + cell.reason));
      }
      if (c.key == "peer_access" && cell.src && cell.dst && cell.peer_access && *cell.peer_access == 0) {
        const auto why = explain_denied_peer_access(r, *cell.src, *cell.dst, merged);
        std::string line = "peer access " + addr(cell.src) + "→" + addr(cell.dst) + " denied: ";
        if (why.empty()) line += "no cause found in the evidence (GPU models, IOMMU, BAR size, driver, root complex)";
        for (std::size_t k = 0; k < why.size(); ++k) line += (k ? "; " : "") + why[k];
        if (const auto d = nvml_cuda_disagreement(r, *cell.src, *cell.dst, false)) line += "; " + *d;
        j.reasons.push_back(line);
        j.load_independent_failure = true;
      }
      if (c.key == "peer_access" && cell.src && cell.dst && cell.peer_access && *cell.peer_access == 1)
        if (const auto d = nvml_cuda_disagreement(r, *cell.src, *cell.dst, true))
          j.notes.push_back("peer access " + addr(cell.src) + "→" + addr(cell.dst) + ": " + *d);
      // Through a write-combined mapping CPU stores are many times faster than loads (seed 004); as
      // fast or slower, the mapping is uncached (PAT off, or the driver refused write combining).
      if (c.key == "bar_copy" && cell.gpu && cell.bar_write_gbps && cell.bar_read_gbps &&
          *cell.bar_write_gbps <= *cell.bar_read_gbps) {
        worse("below_threshold");
        char b[160];
        std::snprintf(b, sizeof b, ": CPU stores %.2f GB/s, no faster than loads %.2f GB/s", *cell.bar_write_gbps,
                      *cell.bar_read_gbps);
        j.reasons.push_back("bar_copy " + addr(cell.gpu) + b +
                            ": the BAR mapping is not write-combined (is PAT on? gdrcopy's mapping_type says which)");
      }
      if (c.key == "latency" && cell.src && cell.dst && cell.latency_ns && spec.max_latency) {
        const double limit_ns = static_cast<double>(spec.max_latency->count());
        if (*cell.latency_ns > limit_ns) {
          worse("below_threshold");
          char b[128];
          std::snprintf(b, sizeof b, ": %.0f ns, above the profile's %.0f ns", *cell.latency_ns, limit_ns);
          j.reasons.push_back("latency " + addr(cell.src) + "→" + addr(cell.dst) + b);
        }
      }
    }
  }
  for (const auto& e : cells) {
    json row = to_json(e);
    // The profile's figure for the pair's class (NV18, then NV; PHB …), then "any"; else a
    // fraction of the expected figure. Host copies have only the fraction.
    std::optional<double> threshold;
    std::string source;
    if (e.case_key == "bar_copy" && e.direction == "h2d") {
      if (auto it = spec.min_bandwidth.find("BAR"); it != spec.min_bandwidth.end()) {
        threshold = it->second.gbps();
        source = "the profile's min_bandwidth.BAR";
      }
    } else if (!e.peer_gpu.empty()) {
      for (const std::string& k : {e.link, e.link.rfind("NV", 0) == 0 ? std::string("NV") : e.link, std::string("any")}) {
        if (auto it = spec.min_bandwidth.find(k); it != spec.min_bandwidth.end()) {
          // The bidirectional figure is two directions at once.
          threshold = it->second.gbps() * (e.direction == "bidirectional" ? 2 : 1);
          source = "the profile's min_bandwidth." + k;
          break;
        }
      }
    }
    if (!threshold && e.expected_gbps) {
      threshold = *e.expected_gbps * spec.min_fraction_of_expected;
      char b[64];
      std::snprintf(b, sizeof b, "%.2f of the expected", spec.min_fraction_of_expected);
      source = b;
    }
    row["threshold_gbps"] = threshold ? json(std::round(*threshold * 1000) / 1000) : json();
    row["threshold_source"] = threshold ? json(source) : json();
    const bool below = threshold && e.measured_gbps < *threshold;
    row["below_threshold"] = below;
    if (below) {
      worse("below_threshold");
      std::string why = e.key() + " (" + e.link + "): " + gbps(e.measured_gbps);
      if (e.expected_gbps) {
        char b[96];
        std::snprintf(b, sizeof b, ", %.0f %% of the expected %.1f GB/s", 100 * *e.ratio(), *e.expected_gbps);
        why += b;
      }
      why += ", below " + gbps(*threshold) + " (" + source + ")";
      if (!e.narrowest.empty()) why += "; narrowest link " + e.narrowest;
      j.reasons.push_back(why);
    }
    j.expectations.push_back(std::move(row));
  }
  bad_bytes = std::max(bad_bytes, cell_bad);
  if (bad_bytes > spec.max_integrity_errors) {
    worse("failed");
    j.load_independent_failure = true;
    j.reasons.push_back("integrity: " + std::to_string(bad_bytes) + " corrupted byte(s) in P2P copies (the profile allows " +
                        std::to_string(spec.max_integrity_errors) + ")");
  }
  if (r.cases_passed == 0 && j.verdict == "passed") {
    worse("below_threshold");
    j.reasons.push_back("no self-test case ran: all " + std::to_string(r.cases_waived) + " were waived");
  }
  if (r.status == "failed" && j.verdict == "passed") {
    worse("failed");
    j.reasons.push_back("the agent reported a failure (" + std::to_string(r.cases_failed) + " case(s) failed)");
  }
  return j;
}

AgentRun judge_agent_run(sys::CommandResult process, std::int64_t started_unix, double duration_s, const std::string& path,
                         std::chrono::nanoseconds time_limit, const SelftestSpec& spec, const Inventory& inv) {
  AgentRun run;
  run.process = std::move(process);
  run.started_unix = started_unix;
  run.duration_s = duration_s;
  auto& j = run.judgement;
  const auto& p = run.process;
  auto stderr_tail = [&] {
    std::string e = p.err.size() > 300 ? p.err.substr(p.err.size() - 300) : p.err;
    while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
    return e.empty() ? std::string() : " (stderr: " + e + ")";
  };
  if (p.start_failed) {
    j = {"error", {"the agent " + path + " could not be started: " + p.describe()}};
    return run;
  }
  if (p.timed_out) {
    j = {"error", {"the agent hung: no result within " + format_duration(time_limit) + "; its process group was killed"}};
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
    j = {"error", {"the agent exited " + std::to_string(p.exit_code) + " but its document says exit_code " +
                   std::to_string(parsed->exit_code)}};
    return run;
  }
  j = judge_agent_result(*parsed, spec, inv);
  run.result = std::move(parsed).value();
  return run;
}

}  // namespace p2pnode::judge
