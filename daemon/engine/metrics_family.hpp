#pragma once
// What the metrics files build their families with: a gauge registered under its name and help,
// and the two readers of the recorded JSON their figures come from.
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace p2pnode::engine::metrics {

inline prometheus::Family<prometheus::Gauge>& gauge(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}

inline std::string str_or(const nlohmann::json& j, const char* key, const char* fallback = "") {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

inline std::optional<double> num(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) { return std::nullopt; }
  return it->get<double>();
}

}  // namespace p2pnode::engine::metrics
