#include "engine/health_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <sstream>

namespace p2pnode::engine {

namespace {
using json = nlohmann::json;
using prometheus::BuildCounter;
using prometheus::BuildGauge;

std::string string_or_empty(const json& j, const char* k) {
  const auto it = j.find(k);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// When the last pass ran and how long it took, once one has run.
void health_pass_timing_metrics(prometheus::Registry& reg, const json& h) {
  const auto passes = h.find("passes");
  if (passes != h.end() && passes->is_number() && passes->get<double>() > 0) {
    BuildGauge()
        .Name("p2pnode_health_last_pass_timestamp_seconds")
        .Help("When the last passive health pass ran (Unix time)")
        .Register(reg)
        .Add({})
        .Set(h.value("last_pass_unix", 0.0));
    BuildGauge()
        .Name("p2pnode_health_pass_duration_seconds")
        .Help("How long the last passive health pass took")
        .Register(reg)
        .Add({})
        .Set(h.value("pass_duration_s", 0.0));
  }
}

// The PCIe devices on the P2P paths, as sysfs counts them: AER errors and degraded links.
void health_device_metrics(prometheus::Registry& reg, const json& h) {
  auto& aer = BuildCounter()
                  .Name("p2pnode_pcie_aer_errors_total")
                  .Help(
                      "PCIe AER errors the kernel counted on a GPU, NVMe drive or bridge on their P2P paths (sysfs "
                      "aer_dev_*), by type: correctable, nonfatal, fatal")
                  .Register(reg);
  auto& degraded = BuildGauge()
                       .Name("p2pnode_pcie_link_degraded")
                       .Help(
                           "1 for a device whose PCIe link runs below its maximum width, or speed where the link does "
                           "not idle down; absent: at its maximum")
                       .Register(reg);
  for (const auto& d : h.value("devices", json::array())) {
    if (!d.is_object()) { continue; }
    const std::string dev = string_or_empty(d, "bdf"), kind = string_or_empty(d, "kind");
    if (d.contains("aer") && d["aer"].is_object()) {
      for (const auto& [sev, v] : d["aer"].items()) {
        if (v.is_object() && v.contains("total") && v["total"].is_number()) {
          aer.Add({{"device", dev}, {"kind", kind}, {"type", sev}}).Increment(v["total"].get<double>());
        }
      }
    }
    // Only where degraded: one series per device on the P2P paths (28 on an 8-GPU box) would repeat 0.
    if (d.value("link_degraded", false) == true) { degraded.Add({{"device", dev}, {"kind", kind}}).Set(1); }
  }
}

// NVLink, where the health pass read it: error counters summed over each GPU's links, active links.
void health_nvlink_metrics(prometheus::Registry& reg, const json& h) {
  const json nv = h.value("nvlink", json());
  if (!nv.is_object() || !nv.value("read", false)) { return; }
  auto& errs = BuildCounter()
                   .Name("p2pnode_nvlink_errors_total")
                   .Help(
                       "NVLink error counters of the GPU summed over its links, as NVML reports them (replay, "
                       "recovery, crc_flit, crc_data, ecc_data)")
                   .Register(reg);
  auto& active = BuildGauge()
                     .Name("p2pnode_nvlink_active_links")
                     .Help("NVLinks of the GPU that NVML reports active")
                     .Register(reg);
  for (const auto& g : nv.value("gpus", json::array())) {
    if (!g.is_object()) { continue; }
    const std::string gpu = string_or_empty(g, "gpu");
    std::map<std::string, double> sums;
    for (const auto& l : g.value("links", json::array())) {
      if (l.is_object() && l.contains("errors") && l["errors"].is_object()) {
        for (const auto& [name, v] : l["errors"].items()) {
          if (v.is_number()) { sums[name] += v.get<double>(); }
        }
      }
    }
    for (const auto& [name, v] : sums) { errs.Add({{"gpu", gpu}, {"counter", name}}).Increment(v); }
    // A GPU without NVLinks (an RTX 4090) has no series: nothing that repeats a constant 0.
    if (!g.value("links", json::array()).empty()) { active.Add({{"gpu", gpu}}).Set(g.value("active_links", 0)); }
  }
}

// The driver's own word (agent schema 2): the GPU's replay counter for every GPU read; the
// recovery action and memory state only where they are not the default, as the regressed cells
// are (the 8-GPU node's budget: docs/monitoring.md, "Metrics and the series budget").
void health_driver_metrics(prometheus::Registry& reg, const json& h) {
  const json gpus = h.value("gpus", json::array());
  if (!gpus.is_array() || gpus.empty()) { return; }
  auto& replays =
      BuildCounter()
          .Name("p2pnode_gpu_pcie_replays_total")
          .Help(
              "The GPU's own PCIe replay counter (NVML; link-level retransmissions), where sysfs may have no AER files")
          .Register(reg);
  auto& action = BuildGauge()
                     .Name("p2pnode_gpu_recovery_action")
                     .Help(
                         "1 for a GPU whose driver names a recovery action other than none (gpu_reset, node_reboot, "
                         "drain_p2p, drain_and_reset, recover_imex_domain); absent: none")
                     .Register(reg);
  auto& memory = BuildGauge()
                     .Name("p2pnode_gpu_memory_untrusted")
                     .Help(
                         "1 for a GPU whose memory state needs attention (reason: remap_pending, remap_failure, "
                         "uncorrected_ecc in the health window); absent: none")
                     .Register(reg);
  for (const auto& g : gpus) {
    if (!g.is_object()) { continue; }
    const std::string gpu = string_or_empty(g, "gpu");
    const json pcie = g.value("pcie", json::object());
    if (pcie.contains("replay") && pcie["replay"].is_number()) {
      replays.Add({{"gpu", gpu}}).Increment(pcie["replay"].get<double>());
    }
    const std::string a = string_or_empty(g, "recovery_action");
    if (!a.empty() && a != "none") { action.Add({{"gpu", gpu}, {"action", a}}).Set(1); }
    const json mem = g.value("memory", json::object());
    if (mem.value("remap_pending", json(false)) == true) {
      memory.Add({{"gpu", gpu}, {"reason", "remap_pending"}}).Set(1);
    }
    if (mem.value("remap_failure", json(false)) == true) {
      memory.Add({{"gpu", gpu}, {"reason", "remap_failure"}}).Set(1);
    }
  }
  for (const auto& f : h.value("findings", json::array())) {
    if (f.is_object() && string_or_empty(f, "check") == "health.memory" && f.contains("observed") &&
        f["observed"].value("uncorrected_rise", json(0)).is_number() &&
        f["observed"].value("uncorrected_rise", json(0)).get<double>() > 0) {
      memory.Add({{"gpu", string_or_empty(f, "subject")}, {"reason", "uncorrected_ecc"}}).Set(1);
    }
  }
}

// Xid events per GPU and Xid, where the kernel log was read.
void health_xid_metrics(prometheus::Registry& reg, const json& h) {
  const json xid = h.value("xid", json());
  if (!xid.is_object()) { return; }
  auto& events = BuildCounter()
                     .Name("p2pnode_gpu_xid_events_total")
                     .Help(
                         "Xid events of the GPU in the kernel log since the daemon started reading it (the log from "
                         "boot on, as far as the ring buffer reaches)")
                     .Register(reg);
  for (const auto& c : xid.value("counts", json::array())) {
    if (c.is_object() && c.contains("xid") && c["xid"].is_number_integer()) {
      events.Add({{"gpu", string_or_empty(c, "gpu")}, {"xid", std::to_string(c["xid"].get<int>())}})
          .Increment(c.value("count", 0.0));
    }
  }
}

// One series per finding of the last pass (none when all is well): what the alert rules read.
void health_finding_metrics(prometheus::Registry& reg, const json& h) {
  auto& finding = BuildGauge()
                      .Name("p2pnode_health_finding")
                      .Help(
                          "1 for each finding of the last passive health pass: check (health.aer, health.link, "
                          "health.nvlink, health.xid, health.kernel, health.recovery, health.gpu_pcie, health.memory, "
                          "health.p2p_status), device, severity")
                      .Register(reg);
  for (const auto& f : h.value("findings", json::array())) {
    if (f.is_object()) {
      finding
          .Add({{"check", string_or_empty(f, "check")},
                {"device", string_or_empty(f, "subject")},
                {"severity", string_or_empty(f, "severity")}})
          .Set(1);
    }
  }
}
}  // namespace

std::string render_health_metrics(const json& h) {
  if (!h.is_object() || !h.value("enabled", false)) { return {}; }
  prometheus::Registry reg;
  health_pass_timing_metrics(reg, h);
  health_device_metrics(reg, h);
  health_nvlink_metrics(reg, h);
  health_driver_metrics(reg, h);
  health_xid_metrics(reg, h);
  health_finding_metrics(reg, h);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, reg.Collect());
  return out.str();
}

}  // namespace p2pnode::engine
