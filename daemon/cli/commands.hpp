#pragma once
// The commands behind `p2pnode <verb>`: each returns the process exit status.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "core/result.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::cli {

enum Exit { kOk = 0, kFindings = 1, kUsage = 2 };

struct ProfileChoice {
  std::string profile_file;  // --profile
  std::string profiles_dir;  // --profiles
  std::string root = "/";    // --root
};
void add_profile_options(CLI::App& cmd, ProfileChoice& choice);
// Loads --profile, or selects from --profiles (default <root>/etc/p2pnode/profiles) for this box.
// Prints what went wrong to stderr and returns nullopt on failure.
std::optional<Profile> choose_profile(const ProfileChoice& choice, const Inventory& inv);

// Parses argv into `app` and runs the chosen command; returns the process exit status
// (kUsage for bad arguments, a command's own status otherwise).
int run_app(CLI::App& app, int argc, char** argv);

void register_check(CLI::App& app);
void register_profiles(CLI::App& app);
void register_plan_apply(CLI::App& app);
void register_serve(CLI::App& app);
// `p2pnode-serve http-child`, hidden: the HTTP process `serve` starts (privsep/http_child.hpp).
void register_http_child(CLI::App& app);
void register_status(CLI::App& app);
void register_selftest(CLI::App& app);
void register_judge_kernel(CLI::App& app);

}  // namespace p2pnode::cli
