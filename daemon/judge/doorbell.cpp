#include "judge/doorbell.hpp"

#include <cstdio>

namespace p2pnode::judge {
namespace {
using json = nlohmann::json;
}

DoorbellTargets doorbell_targets(const Profile& p, const std::vector<nvme::ControllerIdentity>& ids) {
  DoorbellTargets out;
  if (!p.nvme) { return out; }
  const auto sel = nvme::select_nvme_drives(p.nvme->drives, ids);
  for (const auto& s : sel.selected) {
    const NvmeDrive& d = *s.drive;
    if (d.driver != "vfio-pci" || !d.pair_gpu) { continue; }
    const nvme::ControllerIdentity* id = nullptr;
    for (const auto& c : ids) {
      if (c.bdf == s.bdf) { id = &c; }
    }
    if (!id || id->driver != "vfio-pci") {
      out.skipped.push_back(s.bdf + " (" + s.matched_by + ") is not on vfio-pci yet: doorbell test not run");
      continue;
    }
    const std::string serial = id->serial.value_or(d.serial.value_or(""));
    const std::string model = id->model.value_or("");
    if (serial.empty()) {
      out.skipped.push_back(s.bdf + ": no serial recorded before the bind, nothing to check Identify against");
      continue;
    }
    if (serial.find(',') != std::string::npos || model.find(',') != std::string::npos) {
      out.skipped.push_back(s.bdf + ": its serial or model contains a comma, which the agent's --nvme cannot carry");
      continue;
    }
    out.targets.push_back({s.bdf, serial, model, d.pair_gpu->str()});
  }
  return out;
}

std::vector<std::string> doorbell_args(const std::vector<DoorbellTarget>& t) {
  std::vector<std::string> a = {"--cases", "nvme_doorbell", "--writer", "both"};
  for (const auto& d : t) {
    std::string spec = "bdf=" + d.bdf + ",serial=" + d.serial;
    if (!d.model.empty()) { spec += ",model=" + d.model; }
    spec += ",gpu=" + d.pair_gpu;
    a.push_back("--nvme");
    a.push_back(spec);
  }
  // The agent's peer-test buffers are not needed: keep its start-up small.
  for (const char* o : {"--size", "4MiB", "--host-size", "4MiB", "--integrity-size", "1MiB"}) { a.emplace_back(o); }
  return a;
}

DoorbellRecord judge_doorbell(const AgentRun& run, const std::vector<DoorbellTarget>& targets) {
  DoorbellRecord rec;
  rec.started_unix = run.started_unix;
  rec.duration_s = run.duration_s;
  if (!run.result) {
    rec.verdict = "error";
    rec.reasons = run.judgement.reasons;
    return rec;
  }
  const AgentResult& r = *run.result;
  if (r.status == "error") {
    rec.verdict = "error";
    rec.reasons.push_back("the agent could not run: " + r.error);
    return rec;
  }
  const AgentCase* c = nullptr;
  for (const auto& k : r.cases) {
    if (k.key == "nvme_doorbell") { c = &k; }
  }
  if (!c) {
    rec.verdict = "error";
    rec.reasons.push_back("the agent's document has no nvme_doorbell case (an agent older than the daemon?)");
    return rec;
  }
  const auto* cells_json = [&]() -> const json* {
    for (const auto& k : r.raw["cases"]) {
      if (k.value("key", "") == "nvme_doorbell") { return &k["cells"]; }
    }
    return nullptr;
  }();
  bool any_passed = false, any_failed = false;
  for (std::size_t i = 0; i < c->cells.size(); ++i) {
    const AgentCell& cell = c->cells[i];
    DoorbellResult d;
    d.nvme = cell.nvme;
    d.writer = cell.writer;
    d.gpu = cell.pair_gpu;
    d.status = cell.status;
    d.reason = cell.reason;
    d.ok = cell.status == "passed";
    for (const auto& t : targets) {
      if (t.bdf == cell.nvme && d.gpu.empty()) { d.gpu = t.pair_gpu; }
    }
    if (cells_json && i < cells_json->size()) {
      const json& cj = (*cells_json)[i];
      if (cj.contains("identify") && cj["identify"].is_object()) {
        d.serial = cj["identify"].value("serial", "");
        d.model = cj["identify"].value("model", "");
      }
      if (cj.contains("completion_us") && cj["completion_us"].is_number()) {
        d.completion_us = cj["completion_us"].get<double>();
      }
    }
    any_passed |= d.ok;
    if (cell.status == "failed") {
      any_failed = true;
      rec.reasons.push_back(d.nvme + " (" + d.writer + " writer" + (d.writer == "gpu" ? ", GPU " + d.gpu : "") +
                            "): " + d.reason);
    }
    rec.results.push_back(std::move(d));
  }
  if (c->cells.empty() && !c->reason.empty()) { rec.reasons.push_back(c->reason); }
  rec.verdict = any_failed ? "failed" : (any_passed ? "passed" : "waived");
  if (rec.verdict == "waived" && rec.reasons.empty()) {
    for (const auto& d : rec.results) { rec.reasons.push_back(d.nvme + ": " + d.reason); }
  }
  return rec;
}

json to_json(const DoorbellRecord& r) {
  json results = json::array();
  for (const auto& d : r.results) {
    json j{{"nvme", d.nvme}, {"gpu", d.gpu}, {"writer", d.writer}, {"status", d.status}, {"ok", d.ok}};
    if (!d.reason.empty()) { j["reason"] = d.reason; }
    if (!d.serial.empty()) { j["serial"] = d.serial; }
    if (!d.model.empty()) { j["model"] = d.model; }
    j["completion_us"] = d.completion_us ? json(*d.completion_us) : json(nullptr);
    results.push_back(std::move(j));
  }
  return {{"verdict", r.verdict}, {"reasons", r.reasons},           {"results", results},
          {"trigger", r.trigger}, {"started_unix", r.started_unix}, {"duration_s", r.duration_s}};
}

Result<DoorbellRecord> doorbell_record_from_json(const json& j) {
  try {
    DoorbellRecord r;
    r.verdict = j.at("verdict").get<std::string>();
    r.reasons = j.at("reasons").get<std::vector<std::string>>();
    r.trigger = j.at("trigger").get<std::string>();
    r.started_unix = j.at("started_unix").get<std::int64_t>();
    r.duration_s = j.at("duration_s").get<double>();
    for (const auto& x : j.at("results")) {
      DoorbellResult d;
      d.nvme = x.at("nvme").get<std::string>();
      d.gpu = x.at("gpu").get<std::string>();
      d.writer = x.at("writer").get<std::string>();
      d.status = x.at("status").get<std::string>();
      d.ok = x.at("ok").get<bool>();
      d.reason = x.value("reason", "");
      d.serial = x.value("serial", "");
      d.model = x.value("model", "");
      if (x.contains("completion_us") && x["completion_us"].is_number()) {
        d.completion_us = x["completion_us"].get<double>();
      }
      r.results.push_back(std::move(d));
    }
    return r;
  } catch (const json::exception& e) { return Error{std::string("nvme_doorbell: ") + e.what()}; }
}

std::vector<std::string> doorbell_lines(const DoorbellRecord& r) {
  std::vector<std::string> lines;
  if (r.verdict == "error") {
    for (const auto& x : r.reasons) { lines.push_back("NVMe doorbell test could not run: " + x); }
    return lines;
  }
  for (const auto& d : r.results) {
    std::string l = d.nvme + (d.gpu.empty() ? "" : " <- GPU " + d.gpu) + ", " + d.writer + " writer: ";
    if (d.ok) {
      char b[64] = "";
      if (d.completion_us) { std::snprintf(b, sizeof b, " in %.0f us", *d.completion_us); }
      l += "OK, the drive answered Identify (serial " + d.serial + ")" + b;
    } else {
      l += (d.status == "waived" ? "not tested: " : "FAILED: ") + d.reason;
    }
    lines.push_back(std::move(l));
  }
  if (r.results.empty()) {
    for (const auto& x : r.reasons) { lines.push_back("NVMe doorbell test not run: " + x); }
  }
  return lines;
}

}  // namespace p2pnode::judge
