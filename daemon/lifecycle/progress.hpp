#pragma once
// How the module's steps (staging, DKMS, the trial build) report a line as they go: to the journal
// under the daemon, to the terminal under `p2pnode apply`.
#include <functional>
#include <string_view>

namespace p2pnode::lifecycle {

using ProgressFn = std::function<void(std::string_view line)>;

}  // namespace p2pnode::lifecycle
