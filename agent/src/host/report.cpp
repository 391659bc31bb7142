#include "p2pnode/agent/report.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iomanip>
#include <sstream>

namespace p2pnode::agent {

const char* to_string(Status s) {
  switch (s) {
    case Status::passed: return "passed";
    case Status::failed: return "failed";
    case Status::waived: return "waived";
  }
  return "failed";
}

void finalize(Report& report) {
  bool any_failed = false;
  for (auto& c : report.cases) {
    if (c.status != Status::waived) {
      bool failed = c.status == Status::failed;
      bool all_waived = !c.cells.empty();
      for (const auto& cell : c.cells) {
        failed = failed || cell.status == Status::failed;
        all_waived = all_waived && cell.status == Status::waived;
      }
      c.status = failed ? Status::failed : (all_waived ? Status::waived : Status::passed);
      if (all_waived && !failed && c.reason.empty()) { c.reason = c.cells.front().reason; }
    }
    any_failed = any_failed || c.status == Status::failed;
  }
  report.exit_code = report.error ? 3 : (any_failed ? 1 : 0);
}

std::optional<double> cell_value(const Cell& cell, const std::string& key) {
  for (const auto& [k, s] : cell.measures) {
    if (k == key) { return s.median; }
  }
  for (const auto& [k, v] : cell.numbers) {
    if (k == key) { return v; }
  }
  return std::nullopt;
}

namespace {

nlohmann::json number_or_null(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) { return nullptr; }
  // Whole numbers (counts, flags, ranks) print as integers.
  if (std::fabs(*v) < 9.0e15 && std::trunc(*v) == *v) { return static_cast<std::int64_t>(*v); }
  return *v;
}

double round_to(double v, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

nlohmann::json summary_json(const Summary& s) {
  return {{"median", round_to(s.median, 4)},
          {"mean", round_to(s.mean, 4)},
          {"min", round_to(s.min, 4)},
          {"max", round_to(s.max, 4)},
          {"p10", round_to(s.p10, 4)},
          {"p90", round_to(s.p90, 4)},
          {"spread_pct", round_to(s.spread_pct, 3)},
          {"count", s.count}};
}

nlohmann::json cell_json(const Cell& cell, CellShape shape) {
  nlohmann::json j;
  if (shape == CellShape::pair) {
    j["src"] = cell.src;
    j["dst"] = cell.dst;
  } else if (shape == CellShape::gpu) {
    j["gpu"] = cell.src;
  }
  for (const auto& [k, v] : cell.extra.items()) { j[k] = v; }
  j["status"] = to_string(cell.status);
  if (!cell.reason.empty()) { j["reason"] = cell.reason; }
  if (cell.step) { j["step"] = *cell.step; }
  j["concurrent_pairs"] = cell.concurrent_pairs;
  for (const auto& [k, s] : cell.measures) { j[k] = summary_json(s); }
  for (const auto& [k, v] : cell.numbers) {
    j[k] = number_or_null(std::isfinite(v) ? std::optional<double>(round_to(v, 4)) : std::nullopt);
  }
  if (!cell.integrity.empty()) {
    auto arr = nlohmann::json::array();
    for (const auto& ic : cell.integrity) {
      arr.push_back(
          {{"label", ic.label},
           {"checked_bytes", ic.checked_bytes},
           {"bad_bytes", ic.bad_bytes},
           {"first_bad_offset", ic.first_bad_offset ? nlohmann::json(*ic.first_bad_offset) : nlohmann::json()}});
    }
    j["integrity"] = std::move(arr);
  }
  return j;
}

}  // namespace

nlohmann::json matrix_json(const CaseResult& c, const std::string& key, int gpu_count) {
  if (c.shape == CellShape::gpu) {
    auto v = nlohmann::json::array();
    for (int g = 0; g < gpu_count; ++g) {
      std::optional<double> value;
      for (const auto& cell : c.cells) {
        if (cell.src == g && cell.status != Status::waived) { value = cell_value(cell, key); }
      }
      v.push_back(number_or_null(value ? std::optional<double>(round_to(*value, 3)) : std::nullopt));
    }
    return v;
  }
  auto m = nlohmann::json::array();
  for (int s = 0; s < gpu_count; ++s) {
    auto row = nlohmann::json::array();
    for (int d = 0; d < gpu_count; ++d) {
      std::optional<double> value;
      for (const auto& cell : c.cells) {
        if (cell.src == s && cell.dst == d && cell.status != Status::waived) { value = cell_value(cell, key); }
      }
      row.push_back(number_or_null(value ? std::optional<double>(round_to(*value, 3)) : std::nullopt));
    }
    m.push_back(std::move(row));
  }
  return m;
}

nlohmann::json gpu_setup_json(const GpuSetup& g) {
  auto opt = [](const std::optional<std::uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  return {{"gpu", g.gpu},
          {"context_s", round_to(g.context_s, 4)},
          {"buffers_s", round_to(g.buffers_s, 4)},
          {"module_s", round_to(g.module_s, 4)},
          {"peer_access_s", round_to(g.peer_access_s, 4)},
          {"module_bytes", g.module_bytes},
          {"buffer_bytes", g.buffer_bytes},
          {"peer_access_bytes", g.peer_access_bytes},
          {"process_bytes", opt(g.process_bytes)},
          {"context_bytes", opt(g.context_bytes)}};
}

nlohmann::json case_timings_json(const CaseTimings& t) {
  return {{"fill_s", round_to(t.fill_s, 4)},
          {"sync_s", round_to(t.sync_s, 4)},
          {"timed_s", round_to(t.timed_s, 4)},
          {"verify_s", round_to(t.verify_s, 4)}};
}

namespace {

// host: the start-up phases and what each GPU's set-up took.
nlohmann::json report_host_json(const Report& r) {
  auto phases = nlohmann::json::array();
  for (const auto& ph : r.phases) {
    phases.push_back({{"name", ph.name},
                      {"at_s", round_to(ph.at_s, 4)},
                      {"rss_bytes", ph.rss_bytes},
                      {"rss_anon_bytes", ph.rss_anon_bytes},
                      {"rss_file_bytes", ph.rss_file_bytes},
                      {"rss_shmem_bytes", ph.rss_shmem_bytes}});
  }
  auto gpus = nlohmann::json::array();
  for (const auto& g : r.gpu_setup) { gpus.push_back(gpu_setup_json(g)); }
  return {{"peak_rss_bytes", r.peak_rss_bytes},
          {"setup_s", round_to(r.setup_s, 4)},
          {"nvml_s", round_to(r.nvml_s, 4)},
          {"phases", std::move(phases)},
          {"gpus", std::move(gpus)}};
}

// config: the options the run took and the CUDA settings in effect.
nlohmann::json report_config_json(const Report& r) {
  const nlohmann::json inject = r.inject_corruption ? nlohmann::json(*r.inject_corruption) : nlohmann::json();
  nlohmann::json config = {{"mode", to_string(r.mode)},
                           {"size_bytes", r.size_bytes},
                           {"host_size_bytes", r.host_size_bytes},
                           {"integrity_size_bytes", r.integrity_size_bytes},
                           {"bar_size_bytes", r.bar_size_bytes},
                           {"iterations", r.iterations},
                           {"copies_per_sample", r.copies},
                           {"warmup_copies", r.warmup},
                           {"latency_accesses", r.latency_accesses},
                           {"latency_sms", r.latency_sms},
                           {"time_budget_s", r.time_budget_s},
                           {"seed", r.seed},
                           {"inject_corruption", inject}};
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : r.environment) { env[k] = v; }
  config["environment"] = std::move(env);
  return config;
}

// schedule: the mode, why (auto), and the rounds in rounds mode.
nlohmann::json report_schedule_json(const Report& r) {
  auto rounds = nlohmann::json::array();
  for (const auto& round : r.rounds) {
    auto jr = nlohmann::json::array();
    for (const auto& p : round) { jr.push_back({p.src, p.dst}); }
    rounds.push_back(std::move(jr));
  }
  nlohmann::json schedule = {{"mode", to_string(r.mode)}, {"rounds", std::move(rounds)}};
  if (!r.mode_reason.empty()) { schedule["reason"] = r.mode_reason; }
  return schedule;
}

nlohmann::json report_device_json(const DeviceInfo& d) {
  nlohmann::json jd = {{"index", d.index},
                       {"cuda_ordinal", d.cuda_ordinal},
                       {"name", d.name},
                       {"uuid", d.uuid},
                       {"pci_bus_id", d.pci_bus_id},
                       {"memory_bytes", d.memory_bytes},
                       {"compute_capability",
                        std::to_string(d.compute_capability_major) + "." + std::to_string(d.compute_capability_minor)},
                       {"multiprocessor_count", d.multiprocessor_count}};
  if (d.pcie_link) {
    jd["pcie_link"] = {{"current_speed_gts", d.pcie_link->current_speed_gts},
                       {"current_width", d.pcie_link->current_width},
                       {"max_speed_gts", d.pcie_link->max_speed_gts},
                       {"max_width", d.pcie_link->max_width},
                       {"theoretical_gbps", round_to(d.pcie_link->theoretical_gbps, 3)}};
  } else {
    jd["pcie_link"] = nullptr;
  }
  return jd;
}

nlohmann::json report_contention_json(const Contention& c) {
  return {{"source", c.source},
          {"reason", c.reason.empty() ? nlohmann::json() : nlohmann::json(c.reason)},
          {"before", to_json(c.before)},
          {"after", to_json(c.after)}};
}

// One case: its matrices over gpu_count GPUs, its cells and, where NVML watched, who else ran.
nlohmann::json report_case_json(const Report& r, const CaseResult& c, int gpu_count) {
  nlohmann::json jc = {{"key", c.key},
                       {"description", c.description},
                       {"status", to_string(c.status)},
                       {"shape", c.shape == CellShape::pair ? "pair" : (c.shape == CellShape::gpu ? "gpu" : "nvme")},
                       {"duration_s", round_to(c.duration_s, 4)},
                       {"timings", case_timings_json(c.timings)},
                       {"steps", c.steps}};
  if (!c.reason.empty()) { jc["reason"] = c.reason; }
  nlohmann::json matrices = nlohmann::json::object();
  for (const auto& key : c.matrix_keys) { matrices[key] = matrix_json(c, key, gpu_count); }
  jc["matrices"] = std::move(matrices);
  auto cells = nlohmann::json::array();
  for (const auto& cell : c.cells) { cells.push_back(cell_json(cell, c.shape)); }
  jc["cells"] = std::move(cells);
  if (r.contention && r.contention->source == "nvml") { jc["foreign_processes"] = to_json(c.foreign_processes); }
  return jc;
}

// summary: the cases by status and the integrity bytes of every cell.
nlohmann::json report_summary_json(const Report& r) {
  int passed = 0;
  int failed = 0;
  int waived = 0;
  std::uint64_t bad_bytes = 0;
  std::uint64_t checked_bytes = 0;
  for (const auto& c : r.cases) {
    for (const auto& cell : c.cells) {
      for (const auto& ic : cell.integrity) {
        bad_bytes += ic.bad_bytes;
        checked_bytes += ic.checked_bytes;
      }
    }
    passed += c.status == Status::passed ? 1 : 0;
    failed += c.status == Status::failed ? 1 : 0;
    waived += c.status == Status::waived ? 1 : 0;
  }
  return {{"cases_passed", passed},
          {"cases_failed", failed},
          {"cases_waived", waived},
          {"integrity_checked_bytes", checked_bytes},
          {"integrity_bad_bytes", bad_bytes}};
}

}  // namespace

nlohmann::json to_json(const Report& r) {
  nlohmann::json j;
  j["schema_version"] = kSchemaVersion;
  j["agent"] = {{"name", "p2pnode-agent"}, {"version", r.agent_version}};
  j["started_at"] = r.started_at;
  j["duration_s"] = round_to(r.duration_s, 4);
  j["status"] = r.error ? "error" : (r.exit_code == 0 ? "passed" : "failed");
  j["exit_code"] = r.exit_code;
  j["error"] = r.error ? nlohmann::json(*r.error) : nlohmann::json();
  j["driver"] = {{"cuda_driver_version", r.driver_version}, {"cuda_runtime_version", r.runtime_version}};
  j["host"] = report_host_json(r);
  j["config"] = report_config_json(r);
  j["schedule"] = report_schedule_json(r);
  auto devices = nlohmann::json::array();
  for (const auto& d : r.devices) { devices.push_back(report_device_json(d)); }
  j["devices"] = std::move(devices);
  if (r.interconnect) { j["interconnect"] = to_json(*r.interconnect); }
  if (r.contention) { j["contention"] = report_contention_json(*r.contention); }
  const int n = static_cast<int>(r.devices.size());
  auto cases = nlohmann::json::array();
  for (const auto& c : r.cases) { cases.push_back(report_case_json(r, c, n)); }
  j["cases"] = std::move(cases);
  j["summary"] = report_summary_json(r);
  return j;
}

namespace {

std::string fmt_value(std::optional<double> v) {
  if (!v) { return "n/a"; }
  std::ostringstream ss;
  ss << std::fixed << std::setprecision(std::fabs(*v) >= 1000.0 ? 1 : 2) << *v;
  return ss.str();
}

// The run's line, the error if any, and a line per GPU.
void table_run_and_devices(std::ostream& out, const Report& r) {
  out << "p2pnode-agent " << r.agent_version << "  mode=" << to_string(r.mode) << "  seed=" << r.seed
      << "  duration=" << std::fixed << std::setprecision(3) << r.duration_s
      << " s  peak_rss=" << (r.peak_rss_bytes / (1024 * 1024)) << " MiB\n";
  if (r.error) { out << "ERROR: " << *r.error << "\n"; }
  for (const auto& d : r.devices) {
    out << "GPU " << d.index << ": " << d.name << "  " << d.pci_bus_id << "  " << d.uuid << "  "
        << (d.memory_bytes / (1024 * 1024)) << " MiB";
    if (d.pcie_link) {
      out << std::defaultfloat << "  PCIe " << d.pcie_link->current_speed_gts << " GT/s x"
          << d.pcie_link->current_width;
    }
    out << "\n";
  }
}

void table_interconnect(std::ostream& out, const Interconnect& ic) {
  out << "Interconnect (" << ic.source << "):";
  if (!ic.reason.empty()) { out << " " << ic.reason; }
  for (const auto& p : ic.pairs) {
    out << "  " << p.a << "-" << p.b << " " << (p.nvlinks > 0 ? "NV" + std::to_string(p.nvlinks) : std::string("PCIe"));
  }
  out << "\n";
}

// A pair case: one matrix per key, row = source GPU, column = destination GPU.
void table_pair_matrices(std::ostream& out, const CaseResult& c, int n) {
  for (const auto& key : c.matrix_keys) {
    out << "   " << key << " (row = source GPU, column = destination GPU)\n";
    out << std::setw(10) << "src\\dst";
    for (int d = 0; d < n; ++d) { out << std::setw(10) << d; }
    out << "\n";
    for (int s = 0; s < n; ++s) {
      out << std::setw(10) << s;
      for (int d = 0; d < n; ++d) {
        std::optional<double> v;
        bool present = false;
        for (const auto& cell : c.cells) {
          if (cell.src == s && cell.dst == d) {
            present = true;
            if (cell.status != Status::waived) { v = cell_value(cell, key); }
          }
        }
        out << std::setw(10) << (s == d ? std::string("-") : (present ? fmt_value(v) : std::string("")));
      }
      out << "\n";
    }
  }
}

// An nvme case: a line per drive and writer.
void table_nvme_cells(std::ostream& out, const CaseResult& c) {
  for (const auto& cell : c.cells) {
    const auto& x = cell.extra;
    out << "   " << x.value("nvme", std::string("?")) << " writer " << x.value("writer", std::string("?"));
    if (x.contains("pair_gpu")) { out << " (GPU " << x["pair_gpu"].get<std::string>() << ")"; }
    out << ": " << to_string(cell.status);
    if (x.contains("identify")) {
      out << ", Identify serial '" << x["identify"].value("serial", std::string()) << "' model '"
          << x["identify"].value("model", std::string()) << "'";
    }
    if (auto us = cell_value(cell, "completion_us")) { out << ", completion in " << fmt_value(us) << " us"; }
    out << "\n";
  }
}

// A per-GPU case: a row per GPU, a column per key; then bar_copy's latencies.
void table_gpu_cells(std::ostream& out, const CaseResult& c) {
  out << std::setw(6) << "gpu";
  for (const auto& key : c.matrix_keys) {
    out << std::setw(std::max<int>(14, static_cast<int>(key.size()) + 2)) << key;
  }
  out << "\n";
  for (const auto& cell : c.cells) {
    out << std::setw(6) << cell.src;
    for (const auto& key : c.matrix_keys) {
      out << std::setw(std::max<int>(14, static_cast<int>(key.size()) + 2))
          << fmt_value(cell.status == Status::waived ? std::nullopt : cell_value(cell, key));
    }
    out << "\n";
  }
  // bar_copy: microseconds per copy, as copylat prints them (median of the buckets).
  for (const auto& cell : c.cells) {
    if (!cell.extra.contains("bar_latency")) { continue; }
    out << "   gpu " << cell.src << " through " << cell.extra.value("backend", std::string("?")) << " ("
        << cell.extra.value("mapping_type", std::string("?")) << "), us per copy, write/read:";
    for (const auto& row : cell.extra["bar_latency"]) {
      out << "  " << row.value("bytes", 0) << " B " << fmt_value(row["write_us"].value("median", 0.0)) << "/"
          << fmt_value(row["read_us"].value("median", 0.0));
    }
    out << "\n";
  }
}

// Every cell that did not pass, with why, and every integrity check that found bad bytes.
void table_cell_problems(std::ostream& out, const CaseResult& c) {
  for (const auto& cell : c.cells) {
    if (cell.status != Status::passed) {
      out << "   " << to_string(cell.status) << " ";
      if (c.shape == CellShape::pair) {
        out << cell.src << "->" << cell.dst;
      } else if (c.shape == CellShape::nvme) {
        out << cell.extra.value("nvme", std::string("?")) << "/" << cell.extra.value("writer", std::string("?"));
      } else {
        out << "gpu " << cell.src;
      }
      out << ": " << cell.reason << "\n";
    }
    for (const auto& ic : cell.integrity) {
      if (ic.bad_bytes > 0) {
        out << "   INTEGRITY " << cell.src << "->" << cell.dst << " " << ic.label << ": " << ic.bad_bytes
            << " bad bytes of " << ic.checked_bytes << ", first at offset " << ic.first_bad_offset.value_or(0) << "\n";
      }
    }
  }
}

void table_case(std::ostream& out, const CaseResult& c, int n) {
  out << "\n== " << c.key << " [" << to_string(c.status) << "] " << std::fixed << std::setprecision(3) << c.duration_s
      << " s, " << c.steps << " step(s)\n   " << c.description << "\n";
  if (!c.reason.empty()) { out << "   reason: " << c.reason << "\n"; }
  if (c.shape == CellShape::pair) {
    table_pair_matrices(out, c, n);
  } else if (c.shape == CellShape::nvme) {
    table_nvme_cells(out, c);
  } else {
    table_gpu_cells(out, c);
  }
  table_cell_problems(out, c);
}

}  // namespace

std::string render_table(const Report& r) {
  std::ostringstream out;
  const int n = static_cast<int>(r.devices.size());
  table_run_and_devices(out, r);
  if (r.interconnect) { table_interconnect(out, *r.interconnect); }
  for (const auto& c : r.cases) { table_case(out, c, n); }
  out << "\nresult: " << (r.error ? "error" : (r.exit_code == 0 ? "passed" : "failed")) << " (exit " << r.exit_code
      << ")\n";
  return out.str();
}

std::string rfc3339_utc(std::int64_t unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string render_timings(const Report& r) {
  std::ostringstream out;
  const double mb = 1e6;
  out << std::fixed << std::setprecision(3);
  out << "timings: " << r.duration_s << " s in all, set-up " << r.setup_s << " s, peak RSS " << std::setprecision(1)
      << static_cast<double>(r.peak_rss_bytes) / mb << " MB; NVML " << std::setprecision(3) << r.nvml_s
      << " s beside the contexts\n";
  out << "  phase                              at_s    RSS MB   anon   file  shmem\n";
  for (const auto& ph : r.phases) {
    out << "  " << std::left << std::setw(32) << ph.name << std::right << std::setprecision(3) << std::setw(7)
        << ph.at_s << std::setprecision(1) << std::setw(9) << static_cast<double>(ph.rss_bytes) / mb << std::setw(7)
        << static_cast<double>(ph.rss_anon_bytes) / mb << std::setw(7) << static_cast<double>(ph.rss_file_bytes) / mb
        << std::setw(7) << static_cast<double>(ph.rss_shmem_bytes) / mb << "\n";
  }
  if (!r.gpu_setup.empty()) {
    out << "  GPU  context_s buffers_s module_s peers_s | device MB: process context modules buffers peers\n";
    for (const auto& g : r.gpu_setup) {
      auto opt = [&](const std::optional<std::uint64_t>& v) {
        std::ostringstream s;
        if (v) {
          s << std::fixed << std::setprecision(1) << static_cast<double>(*v) / mb;
        } else {
          s << "-";
        }
        return s.str();
      };
      out << "  " << std::setw(3) << g.gpu << std::setprecision(3) << std::setw(11) << g.context_s << std::setw(10)
          << g.buffers_s << std::setw(9) << g.module_s << std::setw(8) << g.peer_access_s << " | " << std::setw(17)
          << opt(g.process_bytes) << std::setw(8) << opt(g.context_bytes) << std::setprecision(1) << std::setw(8)
          << static_cast<double>(g.module_bytes) / mb << std::setw(8) << static_cast<double>(g.buffer_bytes) / mb
          << std::setw(6) << static_cast<double>(g.peer_access_bytes) / mb << "\n";
    }
  }
  out << "  case                    total_s   fill_s   sync_s  timed_s verify_s  other_s steps\n";
  for (const auto& c : r.cases) {
    const auto& t = c.timings;
    const double other = c.duration_s - t.fill_s - t.sync_s - t.timed_s - t.verify_s;
    out << "  " << std::left << std::setw(22) << c.key << std::right << std::setprecision(3) << std::setw(9)
        << c.duration_s << std::setw(9) << t.fill_s << std::setw(9) << t.sync_s << std::setw(9) << t.timed_s
        << std::setw(9) << t.verify_s << std::setw(9) << other << std::setw(6) << c.steps << "\n";
  }
  return out.str();
}

}  // namespace p2pnode::agent
