#include "core/finding.hpp"

namespace p2pnode {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::ok: return "ok";
    case Severity::warning: return "warning";
    case Severity::error: break;
  }
  return "error";
}

nlohmann::json to_json(const Finding& f) {
  return {
      {"check", f.check},       {"subject", f.subject},   {"severity", to_string(f.severity)}, {"summary", f.summary},
      {"observed", f.observed}, {"expected", f.expected}, {"remediation", f.remediation}};
}

Severity worst(const std::vector<Finding>& findings) {
  Severity w = Severity::ok;
  for (const auto& f : findings) {
    if (static_cast<int>(f.severity) > static_cast<int>(w)) { w = f.severity; }
  }
  return w;
}

}  // namespace p2pnode
