#include "engine/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <optional>
#include <sstream>

#include "engine/metrics_family.hpp"
#include "engine/metrics_selftest.hpp"
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

using metrics::gauge;
using metrics::num;
using metrics::str_or;

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
