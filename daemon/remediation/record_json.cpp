#include "remediation/record_json.hpp"

namespace p2pnode::remediation {

namespace {
using json = nlohmann::json;

struct Bad {
  std::string message;
};

const json& field(const json& j, const std::string& where, const char* key, bool (json::*is)() const noexcept,
                  const char* expected) {
  if (!j.contains(key)) { throw Bad{"remediation: missing '" + where + key + "'"}; }
  const json& v = j.at(key);
  if (!(v.*is)()) { throw Bad{"remediation: '" + where + key + "' is " + v.type_name() + ", expected " + expected}; }
  return v;
}
std::string text(const json& j, const std::string& where, const char* key) {
  return field(j, where, key, &json::is_string, "a string").get<std::string>();
}
std::int64_t unix_time(const json& j, const std::string& where, const char* key) {
  return field(j, where, key, &json::is_number_integer, "an integer").get<std::int64_t>();
}
std::uint64_t count(const json& j, const std::string& where, const char* key) {
  const json& v = field(j, where, key, &json::is_number_integer, "a count");
  if (v.get<std::int64_t>() < 0) { throw Bad{"remediation: '" + where + key + "' is negative, expected a count"}; }
  return v.get<std::uint64_t>();
}
Rung rung(const json& j, const std::string& where, const char* key) {
  const std::string word = text(j, where, key);
  if (auto r = rung_from(word)) { return *r; }
  throw Bad{"remediation: '" + where + key + "' is '" + word + "', expected a rung"};
}

json to_json(const RungTaken& t) {
  return {{"rung", to_string(t.rung)},
          {"taken_unix", t.taken_unix},
          {"before", t.before},
          {"after", t.after},
          {"outcome", t.outcome}};
}
}  // namespace

json to_json(const LadderRecord& r) {
  json history = json::array();
  for (const auto& t : r.history) { history.push_back(to_json(t)); }
  return {{"active", r.active},
          {"trigger", r.trigger},
          {"started_unix", r.started_unix},
          {"selftests_at", r.selftests_at},
          {"next", r.next},
          {"taken", r.taken ? json(to_string(*r.taken)) : json(nullptr)},
          {"taken_unix", r.taken_unix},
          {"waiting_since_unix", r.waiting_since_unix},
          {"last_reboot_unix", r.last_reboot_unix},
          {"service_required", r.service_required},
          {"why", r.why},
          {"history", history}};
}

Result<LadderRecord> ladder_record_from_json(const json& j) {
  try {
    if (!j.is_object()) { throw Bad{"remediation: expected an object"}; }
    LadderRecord r;
    r.active = field(j, "", "active", &json::is_boolean, "true or false").get<bool>();
    r.trigger = text(j, "", "trigger");
    r.started_unix = unix_time(j, "", "started_unix");
    r.selftests_at = count(j, "", "selftests_at");
    r.next = count(j, "", "next");
    if (r.next > 4) { throw Bad{"remediation: 'next' is " + std::to_string(r.next) + ", expected 0 to 4"}; }
    if (!j.contains("taken")) { throw Bad{"remediation: missing 'taken'"}; }
    if (!j["taken"].is_null()) { r.taken = rung(j, "", "taken"); }
    r.taken_unix = unix_time(j, "", "taken_unix");
    r.waiting_since_unix = unix_time(j, "", "waiting_since_unix");
    r.last_reboot_unix = unix_time(j, "", "last_reboot_unix");
    r.service_required = field(j, "", "service_required", &json::is_boolean, "true or false").get<bool>();
    r.why = text(j, "", "why");
    field(j, "", "history", &json::is_array, "an array");
    const json& history = j.at("history");
    if (history.size() > kRungHistory) {
      throw Bad{"remediation: 'history' holds " + std::to_string(history.size()) + " rungs, at most " +
                std::to_string(kRungHistory)};
    }
    for (std::size_t i = 0; i < history.size(); ++i) {
      const std::string where = "history[" + std::to_string(i) + "].";
      const json& h = history[i];
      if (!h.is_object()) { throw Bad{"remediation: 'history[" + std::to_string(i) + "]' is not an object"}; }
      r.history.push_back({rung(h, where, "rung"), unix_time(h, where, "taken_unix"), text(h, where, "before"),
                           text(h, where, "after"), text(h, where, "outcome")});
    }
    return r;
  } catch (const Bad& b) { return Error{b.message}; }
}

}  // namespace p2pnode::remediation
