#include "core/plan.hpp"

namespace p2pnode {

bool Plan::reboot_required() const {
  for (const auto& s : steps) {
    if (s.reboot_required) { return true; }
  }
  return false;
}

bool Plan::needs_operator() const {
  for (const auto& s : steps) {
    if (s.needs_operator) { return true; }
  }
  return false;
}

const char* to_string(StepOutcome o) {
  switch (o) {
    case StepOutcome::unchanged: return "unchanged";
    case StepOutcome::changed: return "changed";
    case StepOutcome::failed: return "failed";
    case StepOutcome::refused: return "refused";
    case StepOutcome::reboot_required: break;
  }
  return "reboot_required";
}

nlohmann::json to_json(const Step& s) {
  return {{"action", s.action},
          {"subject", s.subject},
          {"description", s.description},
          {"reboot_required", s.reboot_required},
          {"needs_operator", s.needs_operator},
          {"details", s.details}};
}

nlohmann::json to_json(const Plan& p) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : p.steps) { steps.push_back(to_json(s)); }
  return {{"steps", steps}, {"reboot_required", p.reboot_required()}, {"needs_operator", p.needs_operator()}};
}

nlohmann::json to_json(const StepResult& r) {
  return {{"action", r.action}, {"subject", r.subject}, {"outcome", to_string(r.outcome)}, {"message", r.message},
          {"before", r.before}, {"after", r.after},     {"wrote", r.writes > 0},           {"writes", r.writes}};
}

}  // namespace p2pnode
