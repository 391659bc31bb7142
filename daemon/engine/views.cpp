#include "engine/views.hpp"
#include "core/hex.hpp"

#include <cstdio>
#include <set>

#include "nvidia/gpu_table.hpp"
#include "pci/expectation.hpp"
#include "pci/topology.hpp"
#include "remediation/record_json.hpp"
#include "render/report.hpp"

namespace p2pnode::engine {

namespace {
using json = nlohmann::json;

json link_json(const LinkInfo& l) {
  json j = json::object();
  j["speed_gts"] = l.current_gts ? json(*l.current_gts) : json(nullptr);
  j["width"] = l.current_width ? json(*l.current_width) : json(nullptr);
  j["max_speed_gts"] = l.max_gts ? json(*l.max_gts) : json(nullptr);
  j["max_width"] = l.max_width ? json(*l.max_width) : json(nullptr);
  return j;
}

json base_json(const PciDevice& d) {
  return {{"bdf", d.bdf},
          {"vendor_id", hex4(d.vendor)},
          {"device_id", hex4(d.device)},
          {"driver", d.driver},
          {"numa_node", d.numa_node},
          {"root_complex", d.root_complex},
          {"link", link_json(d.link)},
          {"power_state", d.power_state}};
}

constexpr int kViewSchemaVersion = 1;
json with_version(json j) {
  j["schema_version"] = kViewSchemaVersion;
  return j;
}
}  // namespace

json devices_view(const Inventory& inv) {
  json gpus = json::array(), nvme = json::array(), bridges = json::array();
  std::set<std::string> on_paths;
  for (const auto* g : inv.gpus()) {
    json j = base_json(*g);
    auto model = nvidia::find_gpu_model(g->device);
    j["name"] = model ? json(model->name) : json(nullptr);
    const Bar* ap = g->vram_aperture();
    j["aperture_bytes"] = ap ? json(ap->size()) : json(nullptr);
    j["upstream_bridges"] = g->upstream;
    on_paths.insert(g->upstream.begin(), g->upstream.end());
    gpus.push_back(std::move(j));
  }
  for (const auto* n : inv.nvme_controllers()) {
    json j = base_json(*n);
    j["power_control"] = n->power_control;
    std::uint64_t bar0 = 0;
    for (const auto& b : n->bars) {
      if (b.index == 0) { bar0 = b.size(); }
    }
    j["bar0_bytes"] = bar0;
    // BAR0 is healthy when it is assigned and the function is awake (D3cold reads as all ones).
    j["bar0_ok"] = bar0 > 0 && (n->power_state.empty() || n->power_state == "D0");
    j["problems"] = n->problems;
    j["upstream_bridges"] = n->upstream;
    on_paths.insert(n->upstream.begin(), n->upstream.end());
    nvme.push_back(std::move(j));
  }
  for (const auto& b : on_paths) {
    const PciDevice* d = inv.find(b);
    if (!d) { continue; }
    json j = base_json(*d);
    j["acs_redirect"] = d->acs ? json(d->acs->redirects()) : json(nullptr);
    bridges.push_back(std::move(j));
  }
  return {{"gpus", gpus}, {"nvme", nvme}, {"bridges", bridges}};
}

json topology_view(const Inventory& inv) {
  std::vector<const PciDevice*> devs = inv.gpus();
  for (const auto* n : inv.nvme_controllers()) { devs.push_back(n); }
  const auto m = pci::topology_matrix(devs);
  json rows = json::array();
  for (std::size_t i = 0; i < m.cls.size(); ++i) {
    json r = json::array();
    for (std::size_t j = 0; j < m.cls[i].size(); ++j) {
      const bool gpu_pair = i != j && devs[i]->kind != DeviceKind::nvme && devs[j]->kind != DeviceKind::nvme;
      r.push_back(gpu_pair ? pci::pair_link(*devs[i], *devs[j], inv) : std::string(pci::to_string(m.cls[i][j])));
    }
    rows.push_back(std::move(r));
  }
  json kinds = json::array();
  for (const auto* d : devs) { kinds.push_back(d->kind == DeviceKind::nvme ? "nvme" : "gpu"); }
  return {{"devices", m.bdfs}, {"kinds", kinds}, {"matrix", rows}};
}

json driver_view(const Inventory& inv, const Profile* profile) {
  const auto& n = inv.nvidia;
  json j = {{"loaded_version", n.loaded_version ? json(*n.loaded_version) : json(nullptr)},
            {"userspace_version", n.userspace_version ? json(*n.userspace_version) : json(nullptr)},
            {"userspace_source", n.userspace_source},
            {"wanted_version", profile && profile->driver ? json(profile->driver->version) : json(nullptr)},
            {"open_module", n.open_module ? json(*n.open_module) : json(nullptr)}};
  bool match = n.loaded_version.has_value();
  if (match && n.userspace_version) { match = *n.userspace_version == *n.loaded_version; }
  if (match && profile && profile->driver) { match = profile->driver->version == *n.loaded_version; }
  j["match"] = match;
  return j;
}

// One line on a self-test that did not judge the node: skipped, or run beside another job.
json selftest_note(const RecordedState& s) {
  const std::int64_t judged = s.selftest ? s.selftest->started_unix : 0;
  if (s.selftest_skipped && s.selftest_skipped->at_unix >= judged) {
    return "self-test skipped (" + s.selftest_skipped->trigger + "): " + s.selftest_skipped->reason;
  }
  if (s.selftest_contended && s.selftest_contended->started_unix >= judged && !s.selftest_contended->reasons.empty()) {
    return "self-test contended (" + s.selftest_contended->trigger + "): " + s.selftest_contended->reasons.front();
  }
  return nullptr;
}

json status_body(const RecordedState& s, const Runtime& rt) {
  std::map<std::string, int> counts = {{"ok", 0}, {"warning", 0}, {"error", 0}};
  for (const auto& f : s.findings) {
    if (f.contains("severity") && f["severity"].is_string()) { counts[f["severity"].get<std::string>()]++; }
  }
  json selftest = nullptr;
  if (s.selftest) {
    selftest = {{"verdict", s.selftest->verdict},
                {"reasons", s.selftest->reasons},
                {"trigger", s.selftest->trigger},
                {"started_unix", s.selftest->started_unix},
                {"duration_s", s.selftest->duration_s}};
    const json& r = s.selftest->result;
    if (r.is_object() && r.contains("summary")) {
      selftest["summary"] = r["summary"];
    } else {
      selftest["summary"] = nullptr;
    }
    selftest["expectations"] = s.selftest->expectations;  // measured, expected, ratio per cell
    selftest["warnings"] = s.selftest->warnings;
    selftest["notes"] = s.selftest->notes;
  }
  json j = {{"state", to_string(s.state)},
            {"ready", s.state == NodeState::ready},
            {"reasons", s.reasons},
            {"profile", s.profile.empty() ? json(nullptr) : json(s.profile)},
            {"node", s.node},
            {"versions",
             {{"p2pnode", rt.version},
              {"driver_loaded", s.driver.value("loaded_version", json(nullptr))},
              {"driver_userspace", s.driver.value("userspace_version", json(nullptr))},
              {"driver_userspace_source", s.driver.value("userspace_source", std::string())},
              {"driver_wanted", s.driver.value("wanted_version", json(nullptr))},
              {"driver_match", s.driver.value("match", false)}}},
            {"counts",
             {{"gpus", s.devices.value("gpus", json::array()).size()},
              {"nvme", s.devices.value("nvme", json::array()).size()},
              {"findings_ok", counts["ok"]},
              {"findings_warning", counts["warning"]},
              {"findings_error", counts["error"]},
              {"plan_steps", s.plan.value("steps", json::array()).size()}}},
            {"reconcile",
             {{"running", rt.reconcile_running},
              {"queued", rt.reconcile_queued},
              {"last_trigger", s.trigger},
              {"last_unix", s.reconciled_unix},
              {"last_duration_s", s.reconcile_duration_s},
              {"runs", s.reconcile_runs}}},
            {"selftest", selftest},
            {"nvme_doorbell", s.nvme_doorbell ? json{{"verdict", s.nvme_doorbell->verdict},
                                                     {"lines", judge::doorbell_lines(*s.nvme_doorbell)},
                                                     {"started_unix", s.nvme_doorbell->started_unix}}
                                              : json(nullptr)},
            {"selftest_last_success_unix",
             s.selftest_last_success_unix ? json(*s.selftest_last_success_unix) : json(nullptr)},
            {"selftest_note", selftest_note(s)},
            {"next_selftest_unix", rt.next_selftest_unix ? json(*rt.next_selftest_unix) : json(nullptr)},
            {"daemon",
             {{"started_unix", rt.started_unix},
              {"config_file", rt.config_file},
              {"config_problem", rt.config_problem.empty() ? json(nullptr) : json(rt.config_problem)},
              {"state_file", rt.state_file},
              {"state_problem", rt.state_problem.empty() ? json(nullptr) : json(rt.state_problem)}}}};
  if (!rt.health.is_null()) { j["health"] = rt.health; }
  // The remediation ladder: where it stands, the rungs it took with what was seen before and after.
  if (s.profile_remediation || s.remediation.active || !s.remediation.history.empty()) {
    json r = remediation::to_json(s.remediation);
    r["enabled"] = s.profile_remediation;
    r["rungs_taken"] = s.remediation_rungs;
    r["ladders"] = s.remediation_ladders;
    j["remediation"] = std::move(r);
  } else {
    j["remediation"] = nullptr;
  }
  return with_version(std::move(j));
}

json health_summary(const json& h) {
  if (!h.is_object()) { return nullptr; }
  int warning = 0, error = 0;
  json lines = json::array();
  for (const auto& f : h.value("findings", json::array())) {
    if (!f.is_object()) { continue; }
    (f.value("severity", "") == "error" ? error : warning)++;
    lines.push_back(f.value("severity", "") + " " + f.value("check", "") + " " + f.value("subject", "") + ": " +
                    f.value("summary", ""));
  }
  return {{"enabled", h.value("enabled", false)},
          {"passes", h.value("passes", 0)},
          {"last_pass_unix", h.value("last_pass_unix", json(nullptr))},
          {"findings_warning", warning},
          {"findings_error", error},
          {"findings", lines},
          {"problem", h.value("problem", json(nullptr))}};
}

std::string expectations_table(const json& rows) {
  if (!rows.is_array() || rows.empty()) { return {}; }
  std::string out = "self-test bandwidth (GB/s): measured / expected (ratio), threshold, baseline\n";
  auto fmt = [](const json& e, const char* k, const char* f) -> std::string {
    auto it = e.find(k);
    if (it == e.end() || !it->is_number()) { return "-"; }
    char b[32];
    std::snprintf(b, sizeof b, f, it->get<double>());
    return b;
  };
  for (const auto& e : rows) {
    if (!e.is_object()) { continue; }
    const std::string peer = e.value("peer_gpu", json()).is_string() ? "->" + e["peer_gpu"].get<std::string>() : "";
    char line[320];
    std::snprintf(line, sizeof line, "  %-21s %-13s %s%s %-5s %8s / %8s (%s), threshold %s, baseline %s%s\n",
                  e.value("case", "?").c_str(), e.value("direction", "?").c_str(), e.value("gpu", "?").c_str(),
                  peer.c_str(), e.value("link", "?").c_str(), fmt(e, "measured_gbps", "%.1f").c_str(),
                  fmt(e, "expected_gbps", "%.1f").c_str(), fmt(e, "ratio", "%.2f").c_str(),
                  fmt(e, "threshold_gbps", "%.1f").c_str(), fmt(e, "baseline_gbps", "%.1f").c_str(),
                  e.value("regressed", false) ? "  REGRESSED" : (e.value("below_threshold", false) ? "  BELOW" : ""));
    out += line;
  }
  return out;
}

std::vector<std::string> health_holds(const json& h) {
  std::vector<std::string> out;
  if (!h.is_object()) { return out; }
  for (const auto& f : h.value("findings", json::array())) {
    if (f.is_object() && f.value("check", "") == "health.recovery" && f.contains("observed") &&
        f["observed"].is_object() && f["observed"].value("p2p_ready", true) == false) {
      out.push_back("health.recovery " + f.value("subject", "") + ": " + f.value("summary", ""));
    }
  }
  return out;
}

std::vector<std::string> lost_p2p_paths(const json& h) {
  std::vector<std::string> out = health_holds(h);
  if (!h.is_object()) { return out; }
  for (const auto& f : h.value("findings", json::array())) {
    if (!f.is_object()) {
      continue;
    } else if (f.value("check", "") == "health.p2p_status" && f.value("severity", "") == "error") {
      out.push_back("health.p2p_status " + f.value("subject", "") + ": " + f.value("summary", ""));
    } else if (f.value("check", "") == "health.nvlink" && f.contains("observed") && f["observed"].is_object() &&
               f["observed"].value("active", true) == false) {
      out.push_back("health.nvlink " + f.value("subject", "") + ": " + f.value("summary", ""));
    }
  }
  return out;
}

json readyz_body(const RecordedState& s) {
  return {{"state", to_string(s.state)}, {"ready", s.state == NodeState::ready}, {"reasons", s.reasons}};
}

json findings_body(const RecordedState& s) {
  json j = {{"schema_version", render::kCheckSchemaVersion},
            {"node", s.node},
            {"profile", s.profile},
            {"findings", s.findings},
            {"state", to_string(s.state)},
            {"reasons", s.reasons}};
  return j;
}

json devices_body(const RecordedState& s) {
  json j = s.devices.is_object() ? s.devices : json::object();
  for (const char* k : {"gpus", "nvme", "bridges"}) {
    if (!j.contains(k)) { j[k] = json::array(); }
  }
  return with_version(std::move(j));
}

json topology_body(const RecordedState& s) {
  json j = s.topology.is_object() ? s.topology : json::object();
  for (const char* k : {"devices", "kinds", "matrix"}) {
    if (!j.contains(k)) { j[k] = json::array(); }
  }
  return with_version(std::move(j));
}

json plan_body(const RecordedState& s) {
  json plan = s.plan;
  json applied = s.applied.is_array() ? s.applied : json::array();
  for (auto& step : applied) {
    if (step.is_object() && step.contains("after") && step["after"].is_object()) {
      step["after"].erase("installer_log_tail");
    }
  }
  return with_version({{"profile", s.profile},
                       {"steps", plan.value("steps", json::array())},
                       {"reboot_required", plan.value("reboot_required", false)},
                       {"needs_operator", plan.value("needs_operator", false)},
                       {"applied", applied}});
}

json selftest_body(const RecordedState& s) {
  const json doorbell = s.nvme_doorbell ? to_json(*s.nvme_doorbell) : json(nullptr);
  json j;
  if (!s.selftest) {
    j = {{"verdict", nullptr},    {"reasons", json::array()}, {"trigger", nullptr},   {"started_unix", nullptr},
         {"duration_s", nullptr}, {"result", nullptr},        {"contention", nullptr}};
  } else {
    j = to_json(*s.selftest);
  }
  j["last_success_unix"] = s.selftest_last_success_unix ? json(*s.selftest_last_success_unix) : json(nullptr);
  j["nvme_doorbell"] = doorbell;
  // The last run beside another job, when it is newer than the judged one (the document stays out:
  // its figures are in expectations).
  json contended = nullptr;
  if (s.selftest_contended && (!s.selftest || s.selftest_contended->started_unix >= s.selftest->started_unix)) {
    contended = to_json(*s.selftest_contended);
    contended.erase("result");
    contended.erase("warnings");
  }
  j["contended_run"] = std::move(contended);
  j["skipped"] = s.selftest_skipped ? to_json(*s.selftest_skipped) : json(nullptr);
  return with_version(std::move(j));
}

}  // namespace p2pnode::engine
