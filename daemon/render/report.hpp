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
// One row per finding, remediation wrapped beneath it, a summary line at the end.
std::string render_check_table(const Inventory& inv, const std::string& profile,
                               const std::vector<Finding>& findings);
// Word-wraps text to width with the given indent on every line.
std::string wrap(const std::string& text, std::size_t width, const std::string& indent);

}  // namespace p2pnode::render
