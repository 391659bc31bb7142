#include "judge/contention.hpp"

#include <algorithm>
#include <map>

#include "core/units.hpp"

namespace p2pnode::judge {

namespace {
using json = nlohmann::json;

bool ignored(const std::vector<std::string>& ignore, const std::string& name) {
  return std::find(ignore.begin(), ignore.end(), name) != ignore.end();
}

std::string describe_users(const std::vector<GpuUser>& users) {
  // One entry per process, its GPUs together: "pid 4242 (python3, 1.6 GiB) on 0000:06:00.0, 0000:07:00.0".
  std::map<int, std::pair<const GpuUser*, std::vector<std::string>>> by_pid;
  for (const auto& u : users) {
    auto& e = by_pid[u.pid];
    if (!e.first) { e.first = &u; }
    if (!u.gpu.empty()) { e.second.push_back(u.gpu); }
  }
  std::string s;
  for (const auto& [pid, e] : by_pid) {
    s += (s.empty() ? "" : "; ") + std::string("pid ") + std::to_string(pid) + " (" +
         (e.first->name.empty() ? "?" : e.first->name);
    if (e.first->used_memory_bytes) { s += ", " + format_size(Bytes{e.first->used_memory_bytes}); }
    s += ")";
    if (!e.second.empty()) {
      s += " on ";
      for (std::size_t i = 0; i < e.second.size(); ++i) { s += (i ? ", " : "") + e.second[i]; }
    } else if (!e.first->seen.empty() && e.first->seen != "nvml") {
      s += " holding " + e.first->seen;
    }
  }
  return s;
}

GpuUser user_from(const json& p, const std::string& path) {
  auto str = [&](const char* k) {
    auto it = p.find(k);
    if (it == p.end() || !it->is_string()) { throw std::runtime_error(path + "." + k + ": expected a string"); }
    return it->get<std::string>();
  };
  GpuUser u;
  u.gpu = str("gpu");
  u.name = str("name");
  auto pid = p.find("pid");
  if (pid == p.end() || !pid->is_number_integer() || pid->get<long long>() < 1 || pid->get<long long>() > (1LL << 31)) {
    throw std::runtime_error(path + ".pid: expected a process id");
  }
  u.pid = static_cast<int>(pid->get<long long>());
  if (auto m = p.find("used_memory_bytes"); m != p.end() && m->is_number_integer() && m->get<long long>() >= 0) {
    u.used_memory_bytes = m->get<std::uint64_t>();
  }
  u.seen = "nvml";
  return u;
}

std::vector<GpuUser> users_in(const json& list, const std::string& path) {
  std::vector<GpuUser> out;
  if (!list.is_array()) { throw std::runtime_error(path + ": expected an array"); }
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_object()) { throw std::runtime_error(path + "[" + std::to_string(i) + "]: expected an object"); }
    out.push_back(user_from(list[i], path + "[" + std::to_string(i) + "]"));
  }
  return out;
}
}  // namespace

Result<GpuActivity> parse_gpu_activity(std::string_view text) {
  if (text.size() > (1u << 20)) { return Error{"the process list is larger than 1 MiB"}; }
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) { return Error{"the process list is not a JSON object"}; }
  if (j.value("kind", "") != "gpu_processes") { return Error{"kind: expected gpu_processes"}; }
  if (j.value("schema_version", 0) != 1) { return Error{"schema_version: expected 1"}; }
  GpuActivity a;
  a.source = j.value("source", "");
  if (a.source != "nvml" && a.source != "none") { return Error{"source: expected nvml or none"}; }
  if (auto r = j.find("reason"); r != j.end() && r->is_string()) { a.reason = r->get<std::string>(); }
  try {
    a.processes = users_in(j.value("processes", json::array()), "processes");
  } catch (const std::exception& e) { return Error{e.what()}; }
  return a;
}

Busy judge_busy(const sys::CommandResult& agent_processes, const std::vector<GpuUser>& device_holders,
                const std::optional<SchedulerView>& scheduler, const std::vector<std::string>& ignore) {
  Busy b;
  std::optional<GpuActivity> nvml;
  if (!agent_processes.success()) {
    b.note = "p2pnode-agent --processes " + agent_processes.describe();
  } else if (auto a = parse_gpu_activity(agent_processes.out); !a) {
    b.note = "p2pnode-agent --processes: " + a.error().message;
  } else if (a->source != "nvml") {
    b.note = "NVML: " + (a->reason.empty() ? std::string("no answer") : a->reason);
  } else {
    nvml = std::move(a).value();
  }
  const bool by_nvml = nvml.has_value();
  b.source = by_nvml ? "nvml" : "device files";
  for (const auto& u : by_nvml ? nvml->processes : device_holders) {
    if (!ignored(ignore, u.name)) { b.processes.push_back(u); }
  }
  if (!b.processes.empty()) {
    b.busy = true;
    b.reasons.push_back(
        std::string(by_nvml ? "compute processes on the GPUs (NVML): " : "processes hold the GPUs' device files: ") +
        describe_users(b.processes));
  }
  if (scheduler && (scheduler->busy || !scheduler->known)) {
    b.busy = true;
    b.reasons.push_back(
        std::string(scheduler->known ? "the scheduler says the node is in use" : "the scheduler could not be asked") +
        (scheduler->reason.empty() ? "" : ": " + scheduler->reason));
  }
  return b;
}

SelftestDecision decide_selftest(SelftestWhen when, bool forced, const Busy& busy) {
  if (forced) { return {}; }
  if (when == SelftestWhen::never) {
    return {false, "selftest.when is never: passive health only (POST /v1/selftest with {\"force\": true} runs one)"};
  }
  if (when == SelftestWhen::idle && busy.busy) {
    std::string why = "the GPUs are busy";
    for (const auto& r : busy.reasons) { why += "; " + r; }
    return {false, why + " (selftest.when: idle; it is tried again later; {\"force\": true} runs it now)"};
  }
  return {};
}

Contention contention_in(const json& doc, const std::vector<std::string>& ignore) {
  Contention c;
  const auto ct = doc.is_object() ? doc.find("contention") : doc.end();
  if (!doc.is_object() || ct == doc.end() || !ct->is_object()) {
    c.source = "absent";
    return c;
  }
  c.source = ct->value("source", "none");
  if (c.source != "nvml") { return c; }
  std::map<int, bool> seen_pid;
  auto take = [&](const json& list, const std::string& where) {
    std::vector<GpuUser> users;
    try {
      users = users_in(list, where);
    } catch (const std::exception&) {
      return;  // the agent document was checked before; a malformed list says nothing
    }
    bool any = false;
    for (auto& u : users) {
      if (ignored(ignore, u.name)) { continue; }
      any = true;
      if (std::none_of(c.processes.begin(), c.processes.end(),
                       [&](const GpuUser& x) { return x.pid == u.pid && x.gpu == u.gpu; })) {
        c.processes.push_back(u);
      }
      seen_pid[u.pid] = true;
    }
    if (any) { c.seen_at.push_back(where); }
  };
  take(ct->value("before", json::array()), "before");
  for (const auto& k : doc.value("cases", json::array())) {
    if (k.is_object() && k.contains("foreign_processes")) {
      ++c.cases;
      take(k["foreign_processes"], "case " + k.value("key", "?"));
    }
  }
  take(ct->value("after", json::array()), "after");
  c.contended = !c.processes.empty();
  return c;
}

std::string Contention::describe() const {
  std::string s = describe_users(processes);
  std::vector<std::string> where;
  std::size_t in_cases = 0;
  for (const auto& w : seen_at) { in_cases += w.rfind("case ", 0) == 0; }
  for (const auto& w : seen_at) {
    if (w.rfind("case ", 0) != 0) {
      where.push_back(w);
    } else if (in_cases < cases || cases < 3) {
      where.push_back(w);
    } else if (where.empty() || where.back() != "during every case") {
      where.push_back("during every case");
    }
  }
  // "before, during every case, after": keep the order they were seen in.
  if (!where.empty()) {
    s += "; seen ";
    for (std::size_t i = 0; i < where.size(); ++i) { s += (i ? ", " : "") + where[i]; }
  }
  return s;
}

json to_json(const GpuUser& u) {
  return {{"gpu", u.gpu.empty() ? json() : json(u.gpu)},
          {"pid", u.pid},
          {"name", u.name},
          {"used_memory_bytes", u.used_memory_bytes},
          {"seen", u.seen}};
}

json to_json(const Busy& b) {
  json p = json::array();
  for (const auto& u : b.processes) { p.push_back(to_json(u)); }
  return {{"busy", b.busy},
          {"source", b.source},
          {"note", b.note.empty() ? json() : json(b.note)},
          {"reasons", b.reasons},
          {"processes", p}};
}

json to_json(const Contention& c) {
  json p = json::array();
  for (const auto& u : c.processes) { p.push_back(to_json(u)); }
  return {{"contended", c.contended},
          {"source", c.source},
          {"processes", p},
          {"seen_at", c.seen_at},
          {"summary", c.contended ? json(c.describe()) : json()}};
}

}  // namespace p2pnode::judge
