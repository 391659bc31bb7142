#pragma once
// A finding is data, not a log line: the CLI renders it as a row, the API as JSON, metrics as
// a labelled gauge.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace p2pnode {

enum class Severity { ok, warning, error };
const char* to_string(Severity s);

struct Finding {
  std::string check;    // stable dotted id: iommu.mode, rebar.aperture, …
  std::string subject;  // a PCI address, "node", a pair "0000:01:00.0-0000:41:00.0"
  Severity severity = Severity::ok;
  std::string summary;  // one line a person reads first
  nlohmann::json observed;
  nlohmann::json expected;
  std::string remediation;  // what to change and where; empty when ok
};

nlohmann::json to_json(const Finding& f);
Severity worst(const std::vector<Finding>& findings);

}  // namespace p2pnode
