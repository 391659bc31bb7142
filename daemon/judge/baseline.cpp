#include "judge/baseline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/json_text.hpp"
#include "pci/expectation.hpp"

namespace p2pnode::judge {

namespace {
using json = nlohmann::json;
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
}  // namespace

std::optional<double> Baselines::baseline(const std::string& key) const {
  auto it = history.find(key);
  if (it == history.end() || it->second.size() < kMinBaselineRuns) { return std::nullopt; }
  return median(it->second);
}

std::string hardware_fingerprint(const Inventory& inv, const AgentResult& r) {
  std::string f;
  std::vector<const PciDevice*> gpus;
  for (const auto& d : r.devices) {
    const PciDevice* p = inv.find(d.pci_bus_id);
    f += d.pci_bus_id + "=" + d.name;
    if (p) {
      char b[96];
      std::snprintf(b, sizeof b, " %04x:%04x Gen%d x%d", p->vendor, p->device,
                    p->link.max_gts ? pcie_generation(*p->link.max_gts) : 0, p->link.max_width.value_or(0));
      f += b;
      gpus.push_back(p);
    }
    f += "; ";
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (std::size_t j = i + 1; j < gpus.size(); ++j) {
      f += gpus[i]->bdf + "-" + gpus[j]->bdf + " " + pci::pair_link(*gpus[i], *gpus[j], inv) + "; ";
    }
  }
  std::string driver = inv.nvidia.loaded_version.value_or("");
  if (driver.empty() && r.raw.is_object()) {
    const json ic = r.raw.value("interconnect", json::object());
    if (ic.is_object() && ic.contains("nvml_driver_version") && ic["nvml_driver_version"].is_string()) {
      driver = ic["nvml_driver_version"].get<std::string>();
    }
    const json d = r.raw.value("driver", json::object());
    if (driver.empty() && d.is_object() && d.contains("cuda_driver_version")) {
      driver = "cuda " + json_text(d["cuda_driver_version"]);
    }
  }
  return f + "driver " + (driver.empty() ? "unknown" : driver);
}

std::string Regression::describe() const {
  char b[320];
  std::snprintf(b, sizeof b, "%s (%s): %.1f GB/s, %.0f %% below its baseline of %.1f GB/s (median of the last runs)",
                key.c_str(), link.c_str(), measured_gbps, 100 * (1 - measured_gbps / baseline_gbps), baseline_gbps);
  return b;
}

BaselineUpdate update_baselines(Baselines& b, const std::string& fingerprint, const std::vector<CellExpectation>& cells,
                                double max_drop, int runs) {
  BaselineUpdate u;
  if (b.fingerprint != fingerprint) {
    if (!b.fingerprint.empty()) {
      u.reset = "the hardware or driver changed (was: " + b.fingerprint + "; now: " + fingerprint + ")";
    }
    b.history.clear();
    b.fingerprint = fingerprint;
  }
  for (const auto& c : cells) {
    const std::string key = c.key();
    const auto base = b.baseline(key);
    const bool regressed = base && c.measured_gbps < *base * (1 - max_drop);
    if (regressed) { u.regressions.push_back({key, c.link, c.measured_gbps, *base}); }
    u.cells.push_back({{"key", key},
                       {"baseline_gbps", base ? json(std::round(*base * 1000) / 1000) : json()},
                       {"regressed", regressed}});
    auto& h = b.history[key];
    h.push_back(c.measured_gbps);
    const auto keep = static_cast<std::size_t>(std::max(runs, 1));
    if (h.size() > keep) { h.erase(h.begin(), h.end() - static_cast<std::ptrdiff_t>(keep)); }
  }
  return u;
}

json to_json(const Baselines& b) {
  json h = json::object();
  for (const auto& [k, v] : b.history) { h[k] = v; }
  return {{"fingerprint", b.fingerprint}, {"history", h}};
}

Result<Baselines> baselines_from_json(const json& j) {
  if (!j.is_object() || !j.contains("fingerprint") || !j["fingerprint"].is_string() || !j.contains("history") ||
      !j["history"].is_object()) {
    return Error{"baselines: expected {fingerprint: string, history: object}"};
  }
  Baselines b;
  b.fingerprint = j["fingerprint"].get<std::string>();
  for (auto it = j["history"].begin(); it != j["history"].end(); ++it) {
    if (!it.value().is_array()) { return Error{"baselines.history." + it.key() + ": expected an array of numbers"}; }
    auto& v = b.history[it.key()];
    for (const auto& x : it.value()) {
      if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < 0) {
        return Error{"baselines.history." + it.key() + ": expected non-negative numbers"};
      }
      v.push_back(x.get<double>());
    }
  }
  return b;
}

}  // namespace p2pnode::judge
