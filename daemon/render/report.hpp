#pragma once
// Renders check results: the JSON document (schema api/check-report.schema.json) and the table.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/finding.hpp"
#include "core/inventory.hpp"

namespace p2pnode::render {

constexpr int kCheckSchemaVersion = 1;

nlohmann::json node_json(const Inventory& inv);
nlohmann::json check_report_json(const Inventory& inv, const std::string& profile,
                                 const std::vector<Finding>& findings);
// Findings that say the same of several subjects (same check, result, summary and fix: six GPUs
// whose apertures all cover their VRAM) share one row whose subject counts them ("6 GPUs"); a
// warning or error row lists their addresses beneath it. A summary or fix that differs only by
// naming its own subject (the ACS fix's `setpci -s <bridge>`) counts as the same: the row prints
// it with "<address>" in the subject's place. Subjects that differ otherwise keep their own rows.
struct FindingRow {
  const Finding* first = nullptr;
  std::vector<std::string> subjects;  // every subject the row stands for, in the findings' order
  std::string subject;                // as printed: the subject itself, or "6 GPUs", "2 NVMe", …
  std::string summary;                // as printed: the finding's, or the group's with "<address>"
  std::string remediation;            // likewise
};
std::vector<FindingRow> group_findings(const Inventory& inv, const std::vector<Finding>& findings);

// One row per group (verbose: per finding), remediation wrapped beneath it, a summary line at the end.
std::string render_check_table(const Inventory& inv, const std::string& profile, const std::vector<Finding>& findings,
                               bool verbose = false);
// Word-wraps text to width with the given indent on every line.
std::string wrap(const std::string& text, std::size_t width, const std::string& indent);

}  // namespace p2pnode::render
