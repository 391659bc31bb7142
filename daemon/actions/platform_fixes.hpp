#pragma once
// Platform fixes the profile may allow: ACS redirect off, BAR resize, kernel command line.
#include <memory>
#include <string>

#include "actions/action.hpp"

namespace p2pnode::actions {

std::unique_ptr<Action> make_acs_fix();
std::unique_ptr<Action> make_rebar_resize();
std::unique_ptr<Action> make_kernel_cmdline_fix();

// Pure: GRUB_CMDLINE_LINUX="…" with `arg` added and conflicting iommu arguments removed.
// Returns the new file text, or the unchanged text when arg is already there.
std::string edit_grub_default(const std::string& text, const std::string& arg, bool& changed);

}  // namespace p2pnode::actions
