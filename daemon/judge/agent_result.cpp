#include "judge/agent_result.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/json_text.hpp"

namespace p2pnode::judge {

namespace {
using json = nlohmann::json;

struct Bad {
  std::string message;
};

// Field access that names the path of what is wrong. The path is a view: with a `const
// std::string&` a call like field(j, "", "error") makes a temporary string, and gcc 14's
// -Wdangling-reference then takes the returned reference (into j) for one into that temporary.
const json& field(const json& j, std::string_view path, const char* key) {
  if (!j.is_object()) { throw Bad{std::string(path) + ": expected an object"}; }
  auto it = j.find(key);
  if (it == j.end()) { throw Bad{(path.empty() ? std::string() : std::string(path) + ".") + key + ": missing"}; }
  return *it;
}
std::string sub(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }

std::string get_string(const json& j, const std::string& path, const char* key) {
  const json& v = field(j, path, key);
  if (!v.is_string()) { throw Bad{sub(path, key) + ": expected a string, found " + v.type_name()}; }
  return v.get<std::string>();
}
double get_number(const json& j, const std::string& path, const char* key, bool non_negative = true) {
  const json& v = field(j, path, key);
  if (!v.is_number()) { throw Bad{sub(path, key) + ": expected a number, found " + std::string(v.type_name())}; }
  const double d = v.get<double>();
  if (!std::isfinite(d) || (non_negative && d < 0)) {
    throw Bad{sub(path, key) + ": " + json_text(v) + " is out of range"};
  }
  return d;
}
std::int64_t get_int(const json& j, const std::string& path, const char* key, std::int64_t min, std::int64_t max) {
  const json& v = field(j, path, key);
  if (!v.is_number_integer()) {
    throw Bad{sub(path, key) + ": expected an integer, found " + json_text(v).substr(0, 40)};
  }
  const auto i = v.get<std::int64_t>();
  if (i < min || i > max) { throw Bad{sub(path, key) + ": " + std::to_string(i) + " is out of range"}; }
  return i;
}
std::optional<double> opt_median(const json& cell, const std::string& path, const char* key) {
  auto it = cell.find(key);
  if (it == cell.end() || it->is_null()) { return std::nullopt; }
  return get_number(*it, sub(path, key), "median");
}
std::string one_of(const std::string& v, const std::string& path, std::initializer_list<const char*> words) {
  for (const char* w : words) {
    if (v == w) { return v; }
  }
  throw Bad{path + ": unexpected value '" + v.substr(0, 40) + "'"};
}

AgentCell parse_cell(const json& c, const std::string& path, std::size_t n_devices, const std::string& shape) {
  if (!c.is_object()) { throw Bad{path + ": expected an object"}; }
  AgentCell cell;
  cell.status = one_of(get_string(c, path, "status"), sub(path, "status"), {"passed", "failed", "waived"});
  if (c.contains("reason")) { cell.reason = get_string(c, path, "reason"); }
  const auto max_index = static_cast<std::int64_t>(n_devices) - 1;
  if (shape == "pair") {
    cell.src = static_cast<int>(get_int(c, path, "src", 0, max_index));
    cell.dst = static_cast<int>(get_int(c, path, "dst", 0, max_index));
  } else if (shape == "nvme") {
    cell.nvme = get_string(c, path, "nvme");
    if (cell.nvme.size() > 300) { throw Bad{sub(path, "nvme") + ": longer than 300 characters"}; }
    cell.writer = one_of(get_string(c, path, "writer"), sub(path, "writer"), {"host", "gpu", "none"});
    if (c.contains("pair_gpu")) { cell.pair_gpu = get_string(c, path, "pair_gpu"); }
  } else {
    cell.gpu = static_cast<int>(get_int(c, path, "gpu", 0, max_index));
  }
  cell.bandwidth_gbps = opt_median(c, path, "bandwidth_gbps");
  cell.direction_bandwidth_gbps = opt_median(c, path, "direction_bandwidth_gbps");
  cell.latency_ns = opt_median(c, path, "latency_ns");
  cell.h2d_gbps = opt_median(c, path, "h2d_bandwidth_gbps");
  cell.d2h_gbps = opt_median(c, path, "d2h_bandwidth_gbps");
  cell.bar_write_gbps = opt_median(c, path, "bar_write_bandwidth_gbps");
  cell.bar_read_gbps = opt_median(c, path, "bar_read_bandwidth_gbps");
  if (c.contains("peer_access") && !c["peer_access"].is_null()) {
    cell.peer_access = get_number(c, path, "peer_access");
  }
  if (auto it = c.find("integrity"); it != c.end()) {
    if (!it->is_array()) { throw Bad{sub(path, "integrity") + ": expected an array"}; }
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string p = sub(path, "integrity") + "[" + std::to_string(i) + "]";
      cell.integrity_bad_bytes += static_cast<std::uint64_t>(get_int((*it)[i], p, "bad_bytes", 0, INT64_MAX));
      cell.integrity_checked_bytes += static_cast<std::uint64_t>(get_int((*it)[i], p, "checked_bytes", 0, INT64_MAX));
    }
  }
  return cell;
}

void parse_interconnect(const json& ic, AgentResult& r) {
  const std::string p = "interconnect";
  r.interconnect_source = one_of(get_string(ic, p, "source"), p + ".source", {"nvml", "none"});
  const json& reason = field(ic, p, "reason");
  if (!reason.is_null() && !reason.is_string()) { throw Bad{p + ".reason: expected a string or null"}; }
  if (reason.is_string()) { r.interconnect_reason = reason.get<std::string>(); }
  const json& pairs = field(ic, p, "pairs");
  if (!pairs.is_array()) { throw Bad{p + ".pairs: expected an array"}; }
  const auto max_index = static_cast<std::int64_t>(r.devices.size()) - 1;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const std::string q = p + ".pairs[" + std::to_string(i) + "]";
    const json& g = field(pairs[i], q, "gpus");
    if (!g.is_array() || g.size() != 2) { throw Bad{q + ".gpus: expected two device indices"}; }
    AgentPairLink l;
    for (int k = 0; k < 2; ++k) {
      if (!g[k].is_number_integer() || g[k].get<std::int64_t>() < 0 || g[k].get<std::int64_t>() > max_index) {
        throw Bad{q + ".gpus[" + std::to_string(k) + "]: expected a device index 0.." + std::to_string(max_index)};
      }
    }
    l.a = g[0].get<int>();
    l.b = g[1].get<int>();
    if (l.a == l.b) { throw Bad{q + ".gpus: a GPU paired with itself"}; }
    l.nvlinks = static_cast<int>(get_int(pairs[i], q, "nvlinks", 0, 1024));
    if (auto v = pairs[i].find("nvlink_version"); v != pairs[i].end() && !v->is_null()) {
      l.nvlink_version = static_cast<unsigned>(get_int(pairs[i], q, "nvlink_version", 0, 255));
    }
    if (auto v = pairs[i].find("nvlink_via"); v != pairs[i].end() && !v->is_null()) {
      l.via = one_of(get_string(pairs[i], q, "nvlink_via"), q + ".nvlink_via", {"direct", "nvswitch"});
    }
    if (auto st = pairs[i].find("p2p_status"); st != pairs[i].end()) {
      if (!st->is_object()) { throw Bad{q + ".p2p_status: expected an object"}; }
      for (auto kv = st->begin(); kv != st->end(); ++kv) {
        if (!kv.value().is_string()) { throw Bad{q + ".p2p_status." + kv.key() + ": expected a string"}; }
        l.p2p_status[kv.key()] = kv.value().get<std::string>();
      }
    }
    r.interconnect.push_back(std::move(l));
  }
}

}  // namespace

const AgentPairLink* AgentResult::pair_link(int a, int b) const {
  for (const auto& l : interconnect) {
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) { return &l; }
  }
  return nullptr;
}

const AgentDevice* AgentResult::device(int index) const {
  for (const auto& d : devices) {
    if (d.index == index) { return &d; }
  }
  return nullptr;
}

int json_nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escape = false;
  for (char ch : text) {
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (ch == '\\') {
        escape = true;
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return deepest;
}

Result<AgentResult> parse_agent_result(std::string_view text) {
  if (text.size() > kMaxAgentOutputBytes) {
    return Error{"the agent printed " + std::to_string(text.size()) + " bytes; at most " +
                 std::to_string(kMaxAgentOutputBytes) + " are accepted"};
  }
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) { return Error{"the agent printed nothing on stdout"}; }
  if (json_nesting_depth(text) > kMaxJsonDepth) {
    return Error{"the agent's output nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
  }
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    std::string head(text.substr(first, 60));
    for (auto& ch : head) {
      if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) { ch = '?'; }
    }
    return Error{"the agent's output is not valid JSON (" + std::to_string(text.size()) + " bytes, starting '" + head +
                 "')"};
  }
  return check_agent_document(std::move(doc));
}

Result<AgentResult> check_agent_document(nlohmann::json j) {
  try {
    if (!j.is_object()) { throw Bad{"the document is not a JSON object"}; }
    const auto version = get_int(j, "", "schema_version", INT64_MIN, INT64_MAX);
    if (version != kAgentSchemaVersion) {
      throw Bad{"schema_version " + std::to_string(version) + " is not supported (expected " +
                std::to_string(kAgentSchemaVersion) + ")"};
    }
    AgentResult r;
    const json& agent = field(j, "", "agent");
    if (get_string(agent, "agent", "name") != "p2pnode-agent") { throw Bad{"agent.name: expected 'p2pnode-agent'"}; }
    r.agent_version = get_string(agent, "agent", "version");
    r.started_at = get_string(j, "", "started_at");
    r.duration_s = get_number(j, "", "duration_s");
    r.status = one_of(get_string(j, "", "status"), "status", {"passed", "failed", "error"});
    r.exit_code = static_cast<int>(get_int(j, "", "exit_code", 0, 255));
    if (r.exit_code != 0 && r.exit_code != 1 && r.exit_code != 3) { throw Bad{"exit_code: expected 0, 1 or 3"}; }
    const json& err = field(j, "", "error");
    if (!err.is_null() && !err.is_string()) { throw Bad{"error: expected a string or null"}; }
    if (err.is_string()) { r.error = err.get<std::string>(); }
    const json& devs = field(j, "", "devices");
    if (!devs.is_array()) { throw Bad{"devices: expected an array"}; }
    if (devs.size() > 64) {
      throw Bad{"devices: " + std::to_string(devs.size()) + " devices; at most 64 are accepted"};
    }
    for (std::size_t i = 0; i < devs.size(); ++i) {
      const std::string p = "devices[" + std::to_string(i) + "]";
      AgentDevice d;
      d.index = static_cast<int>(get_int(devs[i], p, "index", 0, 63));
      d.name = get_string(devs[i], p, "name");
      d.uuid = get_string(devs[i], p, "uuid");
      d.pci_bus_id = get_string(devs[i], p, "pci_bus_id");
      if (d.index != static_cast<int>(i)) { throw Bad{p + ".index: expected " + std::to_string(i)}; }
      if (devs[i].contains("compute_capability")) {
        const std::string cc = get_string(devs[i], p, "compute_capability");
        d.compute_capability_major = std::atoi(cc.c_str());
      }
      r.devices.push_back(std::move(d));
    }
    if (auto it = j.find("interconnect"); it != j.end()) { parse_interconnect(*it, r); }
    const json& cases = field(j, "", "cases");
    if (!cases.is_array()) { throw Bad{"cases: expected an array"}; }
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const std::string p = "cases[" + std::to_string(i) + "]";
      AgentCase c;
      c.key = get_string(cases[i], p, "key");
      c.status = one_of(get_string(cases[i], p, "status"), p + ".status", {"passed", "failed", "waived"});
      c.shape = one_of(get_string(cases[i], p, "shape"), p + ".shape", {"pair", "gpu", "nvme"});
      if (cases[i].contains("reason")) { c.reason = get_string(cases[i], p, "reason"); }
      c.duration_s = get_number(cases[i], p, "duration_s");
      const json& cells = field(cases[i], p, "cells");
      if (!cells.is_array()) { throw Bad{p + ".cells: expected an array"}; }
      for (std::size_t k = 0; k < cells.size(); ++k) {
        c.cells.push_back(parse_cell(cells[k], p + ".cells[" + std::to_string(k) + "]", r.devices.size(), c.shape));
      }
      r.cases.push_back(std::move(c));
    }
    const json& s = field(j, "", "summary");
    r.cases_passed = static_cast<std::uint64_t>(get_int(s, "summary", "cases_passed", 0, INT64_MAX));
    r.cases_failed = static_cast<std::uint64_t>(get_int(s, "summary", "cases_failed", 0, INT64_MAX));
    r.cases_waived = static_cast<std::uint64_t>(get_int(s, "summary", "cases_waived", 0, INT64_MAX));
    r.integrity_checked_bytes =
        static_cast<std::uint64_t>(get_int(s, "summary", "integrity_checked_bytes", 0, INT64_MAX));
    r.integrity_bad_bytes = static_cast<std::uint64_t>(get_int(s, "summary", "integrity_bad_bytes", 0, INT64_MAX));
    // A document that contradicts itself is a lying agent.
    const bool says_pass = r.status == "passed";
    if (says_pass != (r.exit_code == 0)) {
      throw Bad{"status '" + r.status + "' contradicts exit_code " + std::to_string(r.exit_code)};
    }
    if (says_pass && r.cases_failed > 0) {
      throw Bad{"status 'passed' with " + std::to_string(r.cases_failed) + " failed case(s)"};
    }
    r.raw = std::move(j);
    return r;
  } catch (const Bad& b) {
    return Error{"the agent's document is not valid: " + b.message};
  } catch (const json::exception& e) { return Error{std::string("the agent's document is not valid: ") + e.what()}; }
}

}  // namespace p2pnode::judge
