#include "engine/health_limits_config.hpp"

#include <charconv>

namespace p2pnode::engine {
namespace {

using profile::MapReader;

// One counter's limit: {min_rise, per_second | per_minute, severity}; what is not given keeps its default.
void read_limit(MapReader& parent, std::string_view key, health::CounterLimit& limit) {
  auto m = parent.map(key, {"min_rise", "per_second", "per_minute", "severity"});
  if (!m) { return; }
  const std::string where = "p2pnode.yaml " + m->path();
  bool changed = false;
  if (auto v = m->integer("min_rise", 1, 1'000'000'000)) {
    limit.min_rise = static_cast<std::uint64_t>(*v), changed = true;
  }
  if (m->has("per_second") && m->has("per_minute")) {
    m->diag().add(m->node(), m->path(), "expected per_second or per_minute, not both");
  }
  for (const auto& [field, scale] : {std::pair<const char*, double>{"per_second", 1.0}, {"per_minute", 1.0 / 60}}) {
    const YAML::Node n = m->get(field);
    if (!n.IsDefined()) { continue; }
    double v = -1;
    const std::string t = n.IsScalar() ? n.Scalar() : "";
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || p != t.data() + t.size() || v < 0 || v > 1e9) {
      m->diag().add(n, m->child_path(field),
                    "expected a rate of at least 0 (0: the count alone decides), found " + profile::describe_node(n));
      continue;
    }
    limit.per_second = v * scale;
    changed = true;
  }
  if (auto s = m->choice("severity", {"warning", "error"})) {
    limit.severity = *s == "error" ? Severity::error : Severity::warning;
    changed = true;
  }
  if (changed) { limit.source = where + " (the default: " + limit.source + ")"; }
}

void read_xid(MapReader& limits, health::HealthLimits& out) {
  auto x = limits.map("xid", {"ignore", "severity"});
  if (!x) { return; }
  for (const auto& n : x->sequence("ignore")) {
    int v = 0;
    const std::string t = n.IsScalar() ? n.Scalar() : "";
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || p != t.data() + t.size() || v < 1 || v > 1000) {
      x->diag().add(n, x->child_path("ignore"), "expected an Xid number (1-1000), found " + profile::describe_node(n));
    } else {
      out.xid_ignored.insert(v);
    }
  }
  const YAML::Node sev = x->get("severity");
  if (!sev.IsDefined()) { return; }
  if (!sev.IsMap()) {
    x->diag().add(sev, x->child_path("severity"),
                  "expected a mapping of Xid number to warning or error, found " + profile::describe_node(sev));
    return;
  }
  for (const auto& kv : sev) {
    int v = 0;
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
    const auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), v);
    const std::string s = kv.second.IsScalar() ? kv.second.Scalar() : "";
    if (k.empty() || ec != std::errc() || p != k.data() + k.size() || v < 1 || v > 1000) {
      x->diag().add(kv.first, x->child_path("severity"),
                    "expected an Xid number (1-1000) as the key, found '" + k + "'");
    } else if (s != "warning" && s != "error") {
      x->diag().add(kv.second, x->child_path("severity") + "." + k,
                    "expected warning or error, found " + profile::describe_node(kv.second));
    } else {
      out.xid_severity[v] = s == "error" ? Severity::error : Severity::warning;
    }
  }
}

}  // namespace

void read_health_limits(MapReader& health, health::HealthLimits& out) {
  auto limits = health.map("limits", {"nvlink", "pcie", "aer", "xid"});
  if (!limits) { return; }
  if (auto nv = limits->map("nvlink", {"replay", "recovery", "crc_flit", "crc_data", "ecc_data"})) {
    for (const char* c : {"replay", "recovery", "crc_flit", "crc_data", "ecc_data"}) {
      if (auto* l = out.nvlink_limit(c)) { read_limit(*nv, c, *l); }
    }
  }
  if (auto pcie = limits->map("pcie", {"replay", "replay_rollover"})) {
    read_limit(*pcie, "replay", out.pcie_replay);
    read_limit(*pcie, "replay_rollover", out.pcie_rollover);
  }
  if (auto aer = limits->map("aer", {"correctable", "nonfatal", "fatal"})) {
    read_limit(*aer, "correctable", out.aer_correctable);
    read_limit(*aer, "nonfatal", out.aer_nonfatal);
    read_limit(*aer, "fatal", out.aer_fatal);
  }
  read_xid(*limits, out);
}

}  // namespace p2pnode::engine
