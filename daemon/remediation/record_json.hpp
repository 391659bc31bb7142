#pragma once
// The ladder's record in the state file and in /v1/status: written whole, read strictly (a field of
// the wrong type is an error naming it, so a hand-edited state file never resumes a ladder wrongly).
#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "remediation/ladder.hpp"

namespace p2pnode::remediation {

nlohmann::json to_json(const LadderRecord& r);
Result<LadderRecord> ladder_record_from_json(const nlohmann::json& j);

}  // namespace p2pnode::remediation
