#include "engine/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <optional>
#include <sstream>

#include "judge/agent_result.hpp"
#include "judge/gpu_info.hpp"

namespace p2pnode::engine {

namespace {
using json = nlohmann::json;
using judge::AgentDevice;
using judge::AgentResult;
using judge::check_agent_document;
using judge::gpu_info;
using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Registry;

Family<Gauge>& gauge(Registry& r, const char* name, const char* help) {
  return BuildGauge().Name(name).Help(help).Register(r);
}

std::string str_or(const json& j, const char* key, const char* fallback = "") {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}
std::optional<double> num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) { return std::nullopt; }
  return it->get<double>();
}

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

// Self-tests beside other jobs: skipped because the GPUs were busy, or run and contended.
void selftest_sharing_metrics(Registry& reg, const RecordedState& s) {
  const std::int64_t judged = s.selftest ? s.selftest->started_unix : 0;
  const bool skipped = s.selftest_skipped && s.selftest_skipped->at_unix >= judged;
  const bool contended = !skipped && s.selftest_contended && s.selftest_contended->started_unix >= judged;
  gauge(reg, "p2pnode_selftest_skipped_busy",
        "1 when the last self-test was skipped because other processes used the GPUs")
      .Add({})
      .Set(skipped && s.selftest_skipped->busy ? 1 : 0);
  gauge(reg, "p2pnode_selftest_contended",
        "1 when the last self-test shared the GPUs with another process (reported, not judged)")
      .Add({})
      .Set(contended ? 1 : 0);
  std::size_t others = 0;
  const json* seen = skipped ? &s.selftest_skipped->seen : contended ? &s.selftest_contended->contention : nullptr;
  if (seen && seen->is_object()) { others = seen->value("processes", json::array()).size(); }
  gauge(reg, "p2pnode_selftest_other_processes",
        "Other processes seen on the GPUs at the last self-test (skipped or contended)")
      .Add({})
      .Set(static_cast<double>(others));
}

void gpu_info_metric(Registry& reg, const RecordedState& s) {
  std::optional<AgentResult> last;
  if (s.selftest && s.selftest->result.is_object()) {
    if (auto r = check_agent_document(s.selftest->result)) { last = std::move(*r); }
  }
  auto& info = gauge(
      reg, "p2pnode_gpu_info",
      "Maps p2pnode's gpu (PCI address) to dcgm-exporter's labels: gpu_index (NVML index), UUID, pci_bus_id, Hostname");
  for (const auto& g :
       gpu_info(s.devices.value("gpus", json::array()), last ? &*last : nullptr, str_or(s.node, "hostname"))) {
    info.Add({{"gpu", g.gpu},
              {"gpu_index", g.gpu_index},
              {"UUID", g.uuid},
              {"pci_bus_id", g.pci_bus_id},
              {"Hostname", g.hostname}})
        .Set(1);
  }
}

// The pair links as the daemon sees them (NV18 when the driver says NVLink, else the PCIe class).
void link_metrics(Registry& reg, const RecordedState& s) {
  const json devs = s.topology.value("devices", json::array()), kinds = s.topology.value("kinds", json::array()),
             matrix = s.topology.value("matrix", json::array());
  if (!devs.is_array() || !kinds.is_array() || !matrix.is_array()) { return; }
  auto& info = gauge(reg, "p2pnode_p2p_link_info",
                     "How gpu reaches peer_gpu: NV<n> (n NVLinks, as the driver reports them) or the PCIe class PIX, "
                     "PXB, PHB, NODE, SYS");
  for (std::size_t i = 0; i < devs.size() && i < matrix.size() && i < kinds.size(); ++i) {
    if (kinds[i] != "gpu" || !matrix[i].is_array()) { continue; }
    for (std::size_t j = 0; j < devs.size() && j < matrix[i].size() && j < kinds.size(); ++j) {
      if (i == j || kinds[j] != "gpu" || !matrix[i][j].is_string() || !devs[i].is_string() || !devs[j].is_string()) {
        continue;
      }
      info.Add({{"gpu", devs[i].get<std::string>()},
                {"peer_gpu", devs[j].get<std::string>()},
                {"link", matrix[i][j].get<std::string>()}})
          .Set(1);
    }
  }
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

void device_metrics(Registry& reg, const RecordedState& s) {
  auto& aperture =
      gauge(reg, "p2pnode_gpu_aperture_bytes", "Size of the GPU's VRAM aperture (the large prefetchable BAR)");
  auto& speed = gauge(reg, "p2pnode_gpu_link_speed_transfers_per_second", "Current PCIe link speed of the GPU");
  auto& max_speed = gauge(reg, "p2pnode_gpu_link_max_speed_transfers_per_second", "Maximum PCIe link speed of the GPU");
  auto& width = gauge(reg, "p2pnode_gpu_link_width_lanes", "Current PCIe link width of the GPU");
  auto& max_width = gauge(reg, "p2pnode_gpu_link_max_width_lanes", "Maximum PCIe link width of the GPU");
  for (const auto& g : s.devices.value("gpus", json::array())) {
    const prometheus::Labels l = {{"gpu", str_or(g, "bdf")}};
    if (auto v = num(g, "aperture_bytes")) { aperture.Add(l).Set(*v); }
    const json link = g.value("link", json::object());
    if (auto v = num(link, "speed_gts")) { speed.Add(l).Set(*v * 1e9); }
    if (auto v = num(link, "max_speed_gts")) { max_speed.Add(l).Set(*v * 1e9); }
    if (auto v = num(link, "width")) { width.Add(l).Set(*v); }
    if (auto v = num(link, "max_width")) { max_width.Add(l).Set(*v); }
  }
  auto& nvme_info = gauge(reg, "p2pnode_nvme_info", "NVMe controller with its bound driver and PCI power state");
  auto& bar0_ok =
      gauge(reg, "p2pnode_nvme_bar0_ok", "1 when the NVMe controller's BAR0 is assigned and the function is in D0");
  auto& bar0_bytes = gauge(reg, "p2pnode_nvme_bar0_bytes", "Size of the NVMe controller's BAR0");
  for (const auto& n : s.devices.value("nvme", json::array())) {
    const std::string b = str_or(n, "bdf");
    nvme_info
        .Add({{"nvme", b},
              {"driver", str_or(n, "driver")},
              {"power_state", str_or(n, "power_state")},
              {"power_control", str_or(n, "power_control")}})
        .Set(1);
    bar0_ok.Add({{"nvme", b}}).Set(n.value("bar0_ok", false) ? 1 : 0);
    if (auto v = num(n, "bar0_bytes")) { bar0_bytes.Add({{"nvme", b}}).Set(*v); }
  }
  if (s.node.contains("iommu")) {
    auto& iommu = gauge(reg, "p2pnode_iommu_mode", "The IOMMU mode in effect (1 for the current mode)");
    const std::string cur = str_or(s.node, "iommu", "unknown");
    for (const char* m : {"off", "passthrough", "translating", "unknown"}) {
      iommu.Add({{"mode", m}}).Set(cur == m ? 1 : 0);
    }
  }
  if (!s.driver.empty()) {
    gauge(reg, "p2pnode_driver_info",
          "NVIDIA driver versions: loaded kernel module, userspace library (and which source found it), the profile's")
        .Add({{"loaded", str_or(s.driver, "loaded_version")},
              {"userspace", str_or(s.driver, "userspace_version")},
              {"userspace_source", str_or(s.driver, "userspace_source")},
              {"wanted", str_or(s.driver, "wanted_version")}})
        .Set(1);
    gauge(reg, "p2pnode_driver_versions_match", "1 when the loaded module, the userspace driver and the profile agree")
        .Add({})
        .Set(s.driver.value("match", false) ? 1 : 0);
  }
}

// p2pnode_kernel_module_installed: one series per installed kernel, from the driver.kernels findings.
void kernel_metrics(Registry& reg, const RecordedState& s) {
  Family<Gauge>* fam = nullptr;
  for (const auto& f : s.findings) {
    if (str_or(f, "check") != "driver.kernels") { continue; }
    if (f.value("observed", json::object()).value("candidate", false)) {  // apt's next kernel, judged before it lands
      gauge(reg, "p2pnode_next_kernel_keeps_p2p",
            "1 when the profile's module builds for the kernel apt would install next")
          .Add({{"kernel", str_or(f, "subject")}})
          .Set(str_or(f, "severity") == "ok" ? 1 : 0);
      continue;
    }
    if (!f.value("expected", json::object()).contains("module")) {
      continue;  // a run-time breakage's warning
    }
    if (!fam) {
      fam = &gauge(
          reg, "p2pnode_kernel_module_installed",
          "1 when the profile's NVIDIA module is built and installed by DKMS for this kernel (version: the profile's)");
    }
    const json obs = f.value("observed", json::object()), exp = f.value("expected", json::object());
    const std::string module = str_or(exp, "module");
    fam->Add({{"kernel", str_or(f, "subject")},
              {"version", module.substr(module.find('/') == std::string::npos ? 0 : module.find('/') + 1)},
              {"running", obs.value("running", false) ? "true" : "false"},
              {"next_boot", obs.value("next_boot", false) ? "true" : "false"}})
        .Set(str_or(f, "severity") == "ok" ? 1 : 0);
  }
}

// p2pnode_secure_boot: one series, from the secureboot.module_signing finding (present when the
// profile builds a module): the firmware's state and whether the kernel trusts DKMS's key.
void secure_boot_metrics(Registry& reg, const RecordedState& s) {
  for (const auto& f : s.findings) {
    if (str_or(f, "check") != "secureboot.module_signing") { continue; }
    const json o = f.value("observed", json::object());
    const std::string state = !o.value("efi", false)                     ? "no_uefi"
                              : o.value("secure_boot", json()).is_null() ? "unknown"
                              : !o.value("secure_boot", false)           ? "off"
                              : (o.value("setup_mode", json()).is_boolean() && o["setup_mode"].get<bool>())
                                  ? "setup_mode"
                                  : "on";
    gauge(
        reg, "p2pnode_secure_boot",
        "1 for the node's Secure Boot state (on, off, setup_mode, no_uefi) and whether the kernel trusts the key DKMS "
        "signs the module with (trusted, queued, untrusted, no_key, unknown, not_enforced)")
        .Add({{"state", state}, {"trust", str_or(o, "trust")}, {"certificate", str_or(o, "certificate")}})
        .Set(1);
  }
}

// What p2pnode is and where the node stands: version and profile, state, reasons, findings.
void node_state_metrics(Registry& reg, const RecordedState& s, const Runtime& rt) {
  gauge(reg, "p2pnode_info", "p2pnode version and the profile that applies to this node")
      .Add({{"version", rt.version}, {"profile", s.profile}})
      .Set(1);
  auto& state = gauge(reg, "p2pnode_node_state", "1 for the node's current state");
  for (int i = 0; i < 6; ++i) {
    const auto st = static_cast<NodeState>(i);
    state.Add({{"state", to_string(st)}}).Set(st == s.state ? 1 : 0);
  }
  gauge(reg, "p2pnode_node_reasons", "Number of reasons the node is not ready")
      .Add({})
      .Set(static_cast<double>(s.reasons.size()));
  auto& findings = gauge(reg, "p2pnode_findings", "Findings of the last check by severity");
  std::map<std::string, double> sev = {{"ok", 0}, {"warning", 0}, {"error", 0}};
  for (const auto& f : s.findings) { sev[str_or(f, "severity", "error")]++; }
  for (const auto& [k, v] : sev) { findings.Add({{"severity", k}}).Set(v); }
}

// The passes: steps left, passes and self-tests counted, when the last pass ran and the daemon started.
void reconcile_metrics(Registry& reg, const RecordedState& s, const Runtime& rt) {
  gauge(reg, "p2pnode_plan_steps", "Steps left in the plan after the last reconcile")
      .Add({})
      .Set(static_cast<double>(s.plan.value("steps", json::array()).size()));
  auto& runs = BuildCounter()
                   .Name("p2pnode_reconcile_runs_total")
                   .Help("Reconcile passes by the node state they decided")
                   .Register(reg);
  for (const auto& [k, v] : s.reconcile_runs) { runs.Add({{"result", k}}).Increment(static_cast<double>(v)); }
  auto& tests = BuildCounter().Name("p2pnode_selftest_runs_total").Help("Self-tests by verdict").Register(reg);
  for (const auto& [k, v] : s.selftest_runs) { tests.Add({{"result", k}}).Increment(static_cast<double>(v)); }
  if (s.reconciled_unix) {
    gauge(reg, "p2pnode_reconcile_last_timestamp_seconds", "When the last reconcile finished (Unix time)")
        .Add({})
        .Set(static_cast<double>(s.reconciled_unix));
    gauge(reg, "p2pnode_reconcile_duration_seconds", "How long the last reconcile took")
        .Add({})
        .Set(s.reconcile_duration_s);
  }
  gauge(reg, "p2pnode_start_time_seconds", "When the daemon started (Unix time)")
      .Add({})
      .Set(static_cast<double>(rt.started_unix));
}

// The last passing self-test and how often one runs.
void selftest_schedule_metrics(Registry& reg, const RecordedState& s, const Runtime& rt) {
  if (s.selftest_last_success_unix) {
    gauge(reg, "p2pnode_selftest_last_success_timestamp_seconds",
          "When the last passing self-test finished (Unix time)")
        .Add({})
        .Set(static_cast<double>(*s.selftest_last_success_unix));
    gauge(reg, "p2pnode_selftest_last_success_duration_seconds", "How long the last passing self-test took")
        .Add({})
        .Set(s.selftest_last_success_duration_s);
  }
  if (rt.selftest_schedule_s) {
    gauge(reg, "p2pnode_selftest_schedule_seconds",
          "How often the self-test runs (the config's schedule, else the profile's)")
        .Add({})
        .Set(*rt.selftest_schedule_s);
  }
}

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

void nvme_doorbell_metrics(Registry& reg, const RecordedState& s) {
  if (!s.nvme_doorbell) { return; }
  // 1: the writer rang the drive's admin SQ tail doorbell and the drive answered Identify with the
  // recorded serial; 0: it failed or could not be tested (the reason is in /v1/selftest).
  auto& ok = gauge(reg, "p2pnode_nvme_doorbell_ok",
                   "1 when the writer (gpu or host) rang the NVMe drive's doorbell and Identify came back right");
  for (const auto& d : s.nvme_doorbell->results) {
    if (d.writer == "host" || d.writer == "gpu") {
      ok.Add({{"nvme", d.nvme}, {"gpu", d.gpu}, {"writer", d.writer}}).Set(d.ok ? 1 : 0);
    }
  }
}

// The remediation ladder, where the profile has one: under way, waiting on a person, the rungs
// taken and how ladders ended.
void remediation_metrics(Registry& reg, const RecordedState& s) {
  if (!s.profile_remediation) { return; }
  gauge(reg, "p2pnode_remediation_active",
        "1 while the remediation ladder is under way (P2P lost, a rung taken or waiting)")
      .Add({})
      .Set(s.remediation.active ? 1 : 0);
  gauge(reg, "p2pnode_remediation_service_required",
        "1 when every rung the profile allows was taken (or a wait ran out) and P2P is still lost: a person's turn")
      .Add({})
      .Set(s.remediation.service_required ? 1 : 0);
  auto& rungs =
      BuildCounter().Name("p2pnode_remediation_rungs_total").Help("Remediation rungs taken, by rung").Register(reg);
  for (const char* r : {"wait_idle", "reset_gpu", "reload_module", "reboot"}) {
    const auto it = s.remediation_rungs.find(r);
    rungs.Add({{"rung", r}}).Increment(it == s.remediation_rungs.end() ? 0.0 : static_cast<double>(it->second));
  }
  auto& ladders = BuildCounter()
                      .Name("p2pnode_remediation_ladders_total")
                      .Help("Remediation ladders ended, by outcome")
                      .Register(reg);
  for (const char* o : {"recovered", "service_required"}) {
    const auto it = s.remediation_ladders.find(o);
    ladders.Add({{"outcome", o}}).Increment(it == s.remediation_ladders.end() ? 0.0 : static_cast<double>(it->second));
  }
}
}  // namespace

std::string render_metrics(const RecordedState& s, const Runtime& rt) {
  Registry reg;
  node_state_metrics(reg, s, rt);
  kernel_metrics(reg, s);
  secure_boot_metrics(reg, s);
  reconcile_metrics(reg, s, rt);
  selftest_schedule_metrics(reg, s, rt);
  selftest_sharing_metrics(reg, s);
  selftest_result_metrics(reg, s, rt);
  nvme_doorbell_metrics(reg, s);
  remediation_metrics(reg, s);
  link_metrics(reg, s);
  device_metrics(reg, s);
  gpu_info_metric(reg, s);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, reg.Collect());
  return out.str();
}

}  // namespace p2pnode::engine
