#include "engine/state.hpp"

#include <filesystem>

#include "core/json_text.hpp"
#include "remediation/record_json.hpp"

namespace p2pnode::engine {

namespace {
constexpr const char* kStateNames[] = {"starting", "ready", "degraded", "reboot_required", "blocked", "failed"};
constexpr std::size_t kMaxStateBytes = 32 << 20;

using json = nlohmann::json;

// Typed getters that throw a message naming the key; state_from_json turns it into an Error.
struct Bad {
  std::string message;
};
const json& at(const json& j, const char* key, json::value_t type) {
  if (!j.is_object() || !j.contains(key)) { throw Bad{std::string("missing '") + key + "'"}; }
  const json& v = j.at(key);
  const bool ok = v.type() == type || (type == json::value_t::number_float && v.is_number()) ||
                  (type == json::value_t::number_integer && v.is_number_integer());
  if (!ok) { throw Bad{std::string("'") + key + "' has the wrong type (" + v.type_name() + ")"}; }
  return v;
}
std::string str(const json& j, const char* key) { return at(j, key, json::value_t::string).get<std::string>(); }
std::vector<std::string> strs(const json& j, const char* key) {
  std::vector<std::string> out;
  for (const auto& v : at(j, key, json::value_t::array)) {
    if (!v.is_string()) { throw Bad{std::string("'") + key + "' holds a non-string"}; }
    out.push_back(v.get<std::string>());
  }
  return out;
}
std::map<std::string, std::uint64_t> counters(const json& j, const char* key) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& [k, v] : at(j, key, json::value_t::object).items()) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
      throw Bad{std::string("'") + key + "." + k + "' is not a count"};
    }
    out[k] = v.get<std::uint64_t>();
  }
  return out;
}
}  // namespace

const char* to_string(NodeState s) { return kStateNames[static_cast<int>(s)]; }

std::optional<NodeState> node_state_from(std::string_view s) {
  for (int i = 0; i < 6; ++i) {
    if (s == kStateNames[i]) { return static_cast<NodeState>(i); }
  }
  return std::nullopt;
}

int severity_rank(NodeState s) { return s == NodeState::starting ? -1 : static_cast<int>(s) - 1; }

json to_json(const SelftestRecord& s) {
  return {{"verdict", s.verdict},           {"reasons", s.reasons},       {"trigger", s.trigger},
          {"started_unix", s.started_unix}, {"duration_s", s.duration_s}, {"result", s.result},
          {"expectations", s.expectations}, {"warnings", s.warnings},     {"notes", s.notes},
          {"contention", s.contention}};
}

json to_json(const SelftestSkip& s) {
  return {{"at_unix", s.at_unix}, {"trigger", s.trigger}, {"reason", s.reason}, {"busy", s.busy}, {"seen", s.seen}};
}

json to_json(const RecordedState& s) {
  json j = {{"schema_version", kStateSchemaVersion},
            {"state", to_string(s.state)},
            {"reasons", s.reasons},
            {"profile", s.profile},
            {"trigger", s.trigger},
            {"reconciled_unix", s.reconciled_unix},
            {"reconcile_duration_s", s.reconcile_duration_s},
            {"node", s.node},
            {"driver", s.driver},
            {"findings", s.findings},
            {"devices", s.devices},
            {"topology", s.topology},
            {"plan", s.plan},
            {"applied", s.applied},
            {"findings_table", s.findings_table},
            {"selftest", s.selftest ? to_json(*s.selftest) : json(nullptr)},
            {"selftest_contended", s.selftest_contended ? to_json(*s.selftest_contended) : json(nullptr)},
            {"selftest_skipped", s.selftest_skipped ? to_json(*s.selftest_skipped) : json(nullptr)},
            {"selftest_last_success_unix",
             s.selftest_last_success_unix ? json(*s.selftest_last_success_unix) : json(nullptr)},
            {"selftest_last_success_duration_s", s.selftest_last_success_duration_s},
            {"reconcile_runs", s.reconcile_runs},
            {"selftest_runs", s.selftest_runs},
            {"nvme_doorbell", s.nvme_doorbell ? to_json(*s.nvme_doorbell) : json(nullptr)},
            {"baselines", to_json(s.baselines)},
            {"remediation", remediation::to_json(s.remediation)},
            {"remediation_rungs", s.remediation_rungs},
            {"remediation_ladders", s.remediation_ladders}};
  return j;
}

namespace {
SelftestRecord selftest_from_json(const json& t, const std::string& name) {
  SelftestRecord r;
  r.verdict = str(t, "verdict");
  r.reasons = strs(t, "reasons");
  r.trigger = str(t, "trigger");
  r.started_unix = at(t, "started_unix", json::value_t::number_integer).get<std::int64_t>();
  r.duration_s = at(t, "duration_s", json::value_t::number_float).get<double>();
  if (!t.contains("result")) { throw Bad{"missing '" + name + ".result'"}; }
  r.result = t["result"];
  // Optional: states written by older versions have neither, nor contention before the busy-GPU work.
  if (t.contains("expectations")) { r.expectations = at(t, "expectations", json::value_t::array); }
  if (t.contains("warnings")) { r.warnings = strs(t, "warnings"); }
  if (t.contains("notes")) { r.notes = strs(t, "notes"); }
  if (t.contains("contention")) { r.contention = t["contention"]; }
  return r;
}
}  // namespace

Result<RecordedState> state_from_json(const json& j) {
  try {
    if (!j.is_object()) { throw Bad{"not a JSON object"}; }
    const auto version = at(j, "schema_version", json::value_t::number_integer).get<int>();
    if (version != kStateSchemaVersion) {
      throw Bad{"schema_version " + std::to_string(version) + ", expected " + std::to_string(kStateSchemaVersion)};
    }
    RecordedState s;
    auto st = node_state_from(str(j, "state"));
    if (!st) { throw Bad{"unknown state '" + str(j, "state") + "'"}; }
    s.state = *st;
    s.reasons = strs(j, "reasons");
    s.profile = str(j, "profile");
    s.trigger = str(j, "trigger");
    s.reconciled_unix = at(j, "reconciled_unix", json::value_t::number_integer).get<std::int64_t>();
    s.reconcile_duration_s = at(j, "reconcile_duration_s", json::value_t::number_float).get<double>();
    s.node = at(j, "node", json::value_t::object);
    s.driver = at(j, "driver", json::value_t::object);
    s.findings = at(j, "findings", json::value_t::array);
    s.devices = at(j, "devices", json::value_t::object);
    s.topology = at(j, "topology", json::value_t::object);
    s.plan = at(j, "plan", json::value_t::object);
    s.applied = at(j, "applied", json::value_t::array);
    s.findings_table = str(j, "findings_table");
    if (!j.contains("selftest")) { throw Bad{"missing 'selftest'"}; }
    // Absent in state files written before self-tests knew about other jobs.
    if (j.contains("selftest_contended") && !j["selftest_contended"].is_null()) {
      s.selftest_contended =
          selftest_from_json(at(j, "selftest_contended", json::value_t::object), "selftest_contended");
    }
    if (j.contains("selftest_skipped") && !j["selftest_skipped"].is_null()) {
      const json& t = at(j, "selftest_skipped", json::value_t::object);
      SelftestSkip k;
      k.at_unix = at(t, "at_unix", json::value_t::number_integer).get<std::int64_t>();
      k.trigger = str(t, "trigger");
      k.reason = str(t, "reason");
      k.busy = at(t, "busy", json::value_t::boolean).get<bool>();
      if (t.contains("seen")) { k.seen = t["seen"]; }
      s.selftest_skipped = std::move(k);
    }
    if (!j["selftest"].is_null()) {
      s.selftest = selftest_from_json(at(j, "selftest", json::value_t::object), "selftest");
    }
    if (!j.contains("selftest_last_success_unix")) { throw Bad{"missing 'selftest_last_success_unix'"}; }
    if (!j["selftest_last_success_unix"].is_null()) {
      s.selftest_last_success_unix =
          at(j, "selftest_last_success_unix", json::value_t::number_integer).get<std::int64_t>();
    }
    s.selftest_last_success_duration_s =
        at(j, "selftest_last_success_duration_s", json::value_t::number_float).get<double>();
    s.reconcile_runs = counters(j, "reconcile_runs");
    s.selftest_runs = counters(j, "selftest_runs");
    // Absent in state files written before the doorbell test existed.
    if (j.contains("nvme_doorbell") && !j["nvme_doorbell"].is_null()) {
      auto d = judge::doorbell_record_from_json(at(j, "nvme_doorbell", json::value_t::object));
      if (!d) { throw Bad{d.error().message}; }
      s.nvme_doorbell = std::move(d).value();
    }
    if (j.contains("baselines")) {
      auto b = judge::baselines_from_json(j["baselines"]);
      if (!b) { throw Bad{b.error().message}; }
      s.baselines = std::move(b).value();
    }
    // Absent in state files written before the remediation ladder.
    if (j.contains("remediation")) {
      auto r = remediation::ladder_record_from_json(j["remediation"]);
      if (!r) { throw Bad{r.error().message}; }
      s.remediation = std::move(r).value();
      s.remediation_rungs = counters(j, "remediation_rungs");
      s.remediation_ladders = counters(j, "remediation_ladders");
    }
    return s;
  } catch (const Bad& b) { return Error{b.message}; } catch (const json::exception& e) {
    return Error{e.what()};
  }
}

StateLoad StateStore::load() const {
  StateLoad out;
  if (!root_.exists(path_)) {
    out.problem = "missing (" + path_ + "): starting with an empty state";
    return out;
  }
  auto text = root_.read_text(path_, kMaxStateBytes);
  if (!text) {
    out.problem = "unreadable (" + path_ + "): " + text.error().message + "; rebuilding it";
    return out;
  }
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    out.problem = "corrupt (" + path_ + "): not valid JSON (" + std::to_string(text->size()) + " bytes); rebuilding it";
    return out;
  }
  auto s = state_from_json(j);
  if (!s) {
    out.problem = "corrupt (" + path_ + "): " + s.error().message + "; rebuilding it";
    return out;
  }
  out.state = std::move(s).value();
  out.loaded = true;
  return out;
}

Status StateStore::save(const RecordedState& s) const {
  const auto dir = std::filesystem::path(path_).parent_path().string();
  if (!root_.is_dir(dir)) {
    if (auto st = root_.make_dirs(dir); !st) { return st.context("creating the state directory"); }
  }
  return root_.write_file_atomic(path_, json_text(to_json(s), 1), std::filesystem::perms(0644))
      .context("writing the state file " + path_);
}

}  // namespace p2pnode::engine
