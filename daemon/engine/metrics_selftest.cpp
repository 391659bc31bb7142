#include "engine/metrics_selftest.hpp"

#include <map>
#include <optional>

#include "engine/metrics_family.hpp"
#include "judge/agent_result.hpp"

namespace p2pnode::engine {

namespace {
using json = nlohmann::json;
using judge::AgentDevice;
using judge::AgentResult;
using judge::check_agent_document;
using metrics::gauge;
using metrics::num;
using metrics::str_or;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Registry;

// A pair's path class: pairs whose expected and threshold figures agree in every case share one,
// so those constants cost a series per class, not per pair. Named after the link and its ceiling
// ("NODE-31.5"); a suffix keeps apart pairs of one link and ceiling whose figures still differ.
struct PathClasses {
  using Case = std::pair<std::string, std::string>;  // engine, direction
  struct Figures {
    std::optional<double> expected, threshold;
    bool operator==(const Figures&) const = default;
  };
  std::map<std::string, std::map<Case, Figures>> paths;
  std::map<std::pair<std::string, std::string>, std::string> of_pair;  // (gpu, peer_gpu) -> path
  std::string path(const std::string& gpu, const std::string& peer) const {
    auto it = of_pair.find({gpu, peer});
    return it == of_pair.end() ? std::string() : it->second;
  }
};

std::string gbps_text(double v) {
  std::ostringstream o;
  o << static_cast<double>(static_cast<long long>(v * 10 + 0.5)) / 10;
  return o.str();
}

// host: the GPUs' host-copy cells (peer_gpu empty, keyed by the GPU alone), else the pairs'.
PathClasses path_classes(const json& expectations, bool host) {
  struct Pair {
    std::string name;
    std::map<PathClasses::Case, PathClasses::Figures> cases;
  };
  std::map<std::pair<std::string, std::string>, Pair> pairs;
  if (expectations.is_array()) {
    for (const auto& e : expectations) {
      if (!e.is_object() || str_or(e, "peer_gpu").empty() != host || str_or(e, "case") == "bar_copy") { continue; }
      Pair& p = pairs[{str_or(e, "gpu"), str_or(e, "peer_gpu")}];
      if (p.name.empty()) {
        const auto ceiling = num(e, "ceiling_gbps");
        p.name = str_or(e, "link", "unknown") + (ceiling ? "-" + gbps_text(*ceiling) : std::string());
      }
      p.cases[{str_or(e, "engine"), str_or(e, "direction")}] = {num(e, "expected_gbps"), num(e, "threshold_gbps")};
    }
  }
  PathClasses out;
  for (const auto& [key, p] : pairs) {
    auto fits = [&](const std::map<PathClasses::Case, PathClasses::Figures>& known) {
      for (const auto& [c, f] : p.cases) {
        if (auto it = known.find(c); it != known.end() && !(it->second == f)) { return false; }
      }
      return true;
    };
    std::string name = p.name;
    for (int n = 2; out.paths.count(name) && !fits(out.paths[name]); ++n) { name = p.name + "~" + std::to_string(n); }
    for (const auto& [c, f] : p.cases) { out.paths[name][c] = f; }
    out.of_pair[key] = name;
  }
  return out;
}

void pair_metrics(Registry& reg, const AgentResult& r, const PathClasses& paths, const PathClasses& host_paths,
                  bool full) {
  auto& bw = gauge(
      reg, "p2pnode_p2p_bandwidth_bytes_per_second",
      "Median P2P copy bandwidth of the last self-test, from gpu to peer_gpu (write), peer_gpu to gpu (read) or both; "
      "path: the pair's class in p2pnode_p2p_path_expected_bandwidth_bytes_per_second");
  auto& lat = gauge(reg, "p2pnode_p2p_latency_seconds",
                    "Median latency of a dependent load by gpu from peer_gpu's memory in the last self-test");
  auto& integ = gauge(reg, "p2pnode_p2p_integrity_error_bytes",
                      full ? "Bytes that arrived corrupted in P2P copies from gpu to peer_gpu in the last self-test"
                           : "Bytes that arrived corrupted in P2P copies from gpu to peer_gpu in the last self-test "
                             "(only pairs with some; "
                             "p2pnode_p2p_integrity_checked_pairs counts the pairs checked)");
  auto& access = gauge(reg, "p2pnode_p2p_access", "1 when gpu can access peer_gpu's memory (last self-test)");
  auto& host =
      gauge(reg, "p2pnode_gpu_host_bandwidth_bytes_per_second",
            "Median host-to-device (h2d) and device-to-host (d2h) bandwidth in the last self-test; path: the GPU's "
            "class in p2pnode_gpu_host_path_expected_bandwidth_bytes_per_second");
  auto bdf = [&](std::optional<int> i) {
    const AgentDevice* d = i ? r.device(*i) : nullptr;
    return d ? d->pci_bus_id : std::string();
  };
  Family<Gauge>* bar = nullptr;
  std::map<std::pair<std::string, std::string>, double> bad;
  for (const auto& c : r.cases) {
    if (c.key == "bar_copy") {  // CPU copies through gdrcopy's mapping: a family of their own
      for (const auto& cell : c.cells) {
        if (!cell.gpu || (!cell.bar_write_gbps && !cell.bar_read_gbps)) { continue; }
        if (!bar) {
          bar = &gauge(
              reg, "p2pnode_gpu_bar_bandwidth_bytes_per_second",
              "Median CPU copy bandwidth through gdrcopy's BAR mapping of the GPU's memory in the last self-test: "
              "write (CPU stores, write-combined) and read (CPU loads, uncached)");
        }
        if (cell.bar_write_gbps) {
          bar->Add({{"gpu", bdf(cell.gpu)}, {"direction", "write"}}).Set(*cell.bar_write_gbps * 1e9);
        }
        if (cell.bar_read_gbps) {
          bar->Add({{"gpu", bdf(cell.gpu)}, {"direction", "read"}}).Set(*cell.bar_read_gbps * 1e9);
        }
      }
      continue;
    }
    std::string engine, direction;
    if (c.key == "ce_write_bandwidth") {
      engine = "ce", direction = "write";
    } else if (c.key == "ce_read_bandwidth") {
      engine = "ce", direction = "read";
    } else if (c.key == "ce_bidir_bandwidth") {
      engine = "ce", direction = "bidirectional";
    } else if (c.key == "sm_write_bandwidth") {
      engine = "sm", direction = "write";
    } else if (c.key == "sm_read_bandwidth") {
      engine = "sm", direction = "read";
    }
    for (const auto& cell : c.cells) {
      if (cell.gpu) {
        const std::string g = bdf(cell.gpu);
        prometheus::Labels l = {{"gpu", g}};
        if (auto path = host_paths.path(g, ""); !path.empty()) { l["path"] = path; }
        if (cell.h2d_gbps) { (l["direction"] = "h2d", host.Add(l).Set(*cell.h2d_gbps * 1e9)); }
        if (cell.d2h_gbps) { (l["direction"] = "d2h", host.Add(l).Set(*cell.d2h_gbps * 1e9)); }
        continue;
      }
      if (!cell.src || !cell.dst) { continue; }
      const std::string g = bdf(cell.src), p = bdf(cell.dst);
      if (!engine.empty() && cell.bandwidth_gbps) {
        prometheus::Labels l = {{"gpu", g}, {"peer_gpu", p}, {"engine", engine}, {"direction", direction}};
        if (auto path = paths.path(g, p); !path.empty()) { l["path"] = path; }
        bw.Add(l).Set(*cell.bandwidth_gbps * 1e9);
      }
      if (c.key == "latency" && cell.latency_ns) {
        lat.Add({{"gpu", g}, {"peer_gpu", p}}).Set(*cell.latency_ns * 1e-9);
      }
      if (c.key == "peer_access" && cell.peer_access) {
        access.Add({{"gpu", g}, {"peer_gpu", p}}).Set(*cell.peer_access);
      }
      if (!cell.integrity_checked_bytes) { continue; }
      bad[{g, p}] += static_cast<double>(cell.integrity_bad_bytes);
    }
  }
  for (const auto& [k, v] : bad) {
    if (full || v > 0) { integ.Add({{"gpu", k.first}, {"peer_gpu", k.second}}).Set(v); }
  }
  gauge(reg, "p2pnode_p2p_integrity_checked_pairs", "GPU pairs whose copies the last self-test checked byte for byte")
      .Add({})
      .Set(static_cast<double>(bad.size()));
}

// The constants per path class: expected and threshold of each pair class and case, expected of
// each host-copy class.
void path_class_metrics(Registry& reg, const PathClasses& paths, const PathClasses& host_paths) {
  auto& path_expected =
      gauge(reg, "p2pnode_p2p_path_expected_bandwidth_bytes_per_second",
            "What a pair of this path class should move: the narrowest link's rate x the efficiency healthy boxes "
            "reach on that path (the pair's path label on p2pnode_p2p_bandwidth_bytes_per_second)");
  auto& path_threshold =
      gauge(reg, "p2pnode_p2p_path_threshold_bytes_per_second",
            "The self-test's pass mark for a pair of this path class: the profile's min_bandwidth, else a "
            "fraction of the expected figure");
  for (const auto& [path, cases] : paths.paths) {
    for (const auto& [c, f] : cases) {
      const prometheus::Labels l = {{"path", path}, {"engine", c.first}, {"direction", c.second}};
      if (f.expected) { path_expected.Add(l).Set(*f.expected * 1e9); }
      if (f.threshold) { path_threshold.Add(l).Set(*f.threshold * 1e9); }
    }
  }
  auto& host_path =
      gauge(reg, "p2pnode_gpu_host_path_expected_bandwidth_bytes_per_second",
            "What host<->device copies of a GPU of this class should move: its narrowest PCIe link x the host-copy "
            "efficiency (the GPU's path label on p2pnode_gpu_host_bandwidth_bytes_per_second)");
  for (const auto& [path, cases] : host_paths.paths) {
    for (const auto& [c, f] : cases) {
      if (f.expected) { host_path.Add({{"path", path}, {"direction", c.second}}).Set(*f.expected * 1e9); }
    }
  }
}

// Regressed cells (with their baseline) and how many, cells below their threshold and how many, the
// node's worst ratio; with full detail also expected, threshold, baseline, ratio, regressed and
// below for every bandwidth cell.
void expectation_metrics(Registry& reg, const SelftestRecord& t, const PathClasses& paths,
                         const PathClasses& host_paths, bool full) {
  if (!t.expectations.is_array() || t.expectations.empty()) { return; }
  path_class_metrics(reg, paths, host_paths);
  auto& baseline =
      gauge(reg, "p2pnode_p2p_baseline_bandwidth_bytes_per_second",
            full ? "The node's own baseline for the pair: median of its last self-tests (absent until enough runs)"
                 : "The node's own baseline for a regressed pair: median of its last self-tests");
  auto& regressed =
      gauge(reg, "p2pnode_p2p_regressed",
            full ? "1 when the pair's bandwidth dropped more than the profile allows below its baseline"
                 : "1 for a pair whose bandwidth dropped more than the profile allows below its baseline (only those)");
  Family<Gauge>* host = nullptr;
  Family<Gauge>* expected = nullptr;
  Family<Gauge>* threshold = nullptr;
  Family<Gauge>* ratio = nullptr;
  if (full) {
    host = &gauge(reg, "p2pnode_gpu_host_expected_bandwidth_bytes_per_second",
                  "What host<->device copies should move: the GPU's narrowest PCIe link x the host-copy efficiency");
    expected = &gauge(
        reg, "p2pnode_p2p_expected_bandwidth_bytes_per_second",
        "What the pair should move: the narrowest link's rate x the efficiency healthy boxes reach on that path");
    threshold = &gauge(
        reg, "p2pnode_p2p_threshold_bytes_per_second",
        "The self-test's pass mark for the pair: the profile's min_bandwidth, else a fraction of the expected figure");
    ratio = &gauge(reg, "p2pnode_p2p_bandwidth_ratio", "Measured over expected bandwidth in the last self-test");
  }
  // Below the threshold: only those cells (every cell with full detail), with the pair's path class,
  // so that the alert reads the few cells that are below rather than joining every pair; and the
  // node's worst pair cell, measured over expected, for the fleet's worst-pair panels.
  auto& below =
      gauge(reg, "p2pnode_p2p_below_threshold",
            full ? "1 when the pair's bandwidth in the last self-test was below the threshold of its path class"
                 : "1 for a pair whose bandwidth in the last self-test was below the threshold of its path class "
                   "(only those)");
  double regressed_cells = 0, below_cells = 0;
  std::optional<double> ratio_min;
  for (const auto& e : t.expectations) {
    if (!e.is_object() || str_or(e, "case") == "bar_copy") {
      continue;  // not host copies (p2pnode_gpu_bar_*)
    }
    const std::string gpu = str_or(e, "gpu"), peer = str_or(e, "peer_gpu"), direction = str_or(e, "direction");
    if (peer.empty()) {
      if (auto v = num(e, "expected_gbps"); v && host) {
        host->Add({{"gpu", gpu}, {"direction", direction}}).Set(*v * 1e9);
      }
      continue;
    }
    const prometheus::Labels l = {
        {"gpu", gpu}, {"peer_gpu", peer}, {"engine", str_or(e, "engine")}, {"direction", direction}};
    const auto it = e.find("regressed");
    const bool is_regressed = it != e.end() && it->is_boolean() && it->get<bool>();
    regressed_cells += is_regressed ? 1 : 0;
    if (full || is_regressed) {
      if (auto v = num(e, "baseline_gbps")) { baseline.Add(l).Set(*v * 1e9); }
      regressed.Add(l).Set(is_regressed ? 1 : 0);
    }
    const auto b = e.find("below_threshold");
    const bool is_below = b != e.end() && b->is_boolean() && b->get<bool>();
    below_cells += is_below ? 1 : 0;
    if (full || is_below) {
      prometheus::Labels with_path = l;
      if (auto path = paths.path(gpu, peer); !path.empty()) { with_path["path"] = path; }
      below.Add(with_path).Set(is_below ? 1 : 0);
    }
    if (auto v = num(e, "ratio"); v && (!ratio_min || *v < *ratio_min)) { ratio_min = v; }
    if (!full) { continue; }
    if (auto v = num(e, "expected_gbps")) { expected->Add(l).Set(*v * 1e9); }
    if (auto v = num(e, "threshold_gbps")) { threshold->Add(l).Set(*v * 1e9); }
    if (auto v = num(e, "ratio")) { ratio->Add(l).Set(*v); }
  }
  gauge(reg, "p2pnode_p2p_regressed_cells",
        "Bandwidth cells (pair and case) of the last self-test regressed against their baseline")
      .Add({})
      .Set(regressed_cells);
  gauge(reg, "p2pnode_p2p_below_threshold_cells",
        "Bandwidth cells (pair and case) of the last self-test below the threshold of their path class")
      .Add({})
      .Set(below_cells);
  if (ratio_min) {
    gauge(reg, "p2pnode_p2p_bandwidth_ratio_min",
          "The lowest measured over expected bandwidth of any pair and case in the last self-test (1.0 = as "
          "healthy boxes measure)")
        .Add({})
        .Set(*ratio_min);
  }
}

}  // namespace

// The last self-test: when, whether it passed, its pairs' figures beside their expectations.
void selftest_result_metrics(Registry& reg, const RecordedState& s, const Runtime& rt) {
  if (!s.selftest) { return; }
  gauge(reg, "p2pnode_selftest_last_run_timestamp_seconds", "When the last self-test started (Unix time)")
      .Add({})
      .Set(static_cast<double>(s.selftest->started_unix));
  gauge(reg, "p2pnode_selftest_passed", "1 when the last self-test passed")
      .Add({})
      .Set(s.selftest->verdict == "passed" ? 1 : 0);
  const PathClasses paths = path_classes(s.selftest->expectations, false),
                    host_paths = path_classes(s.selftest->expectations, true);
  if (s.selftest->result.is_object()) {
    if (auto r = check_agent_document(s.selftest->result)) {
      pair_metrics(reg, *r, paths, host_paths, rt.metrics_full_detail);
    }
  }
  expectation_metrics(reg, *s.selftest, paths, host_paths, rt.metrics_full_detail);
}

}  // namespace p2pnode::engine
