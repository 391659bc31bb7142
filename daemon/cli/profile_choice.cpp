#include <iostream>

#include "cli/commands.hpp"
#include "profile/loader.hpp"
#include "profile/select.hpp"

namespace p2pnode::cli {

void add_profile_options(CLI::App& cmd, ProfileChoice& c) {
  auto* file = cmd.add_option("--profile", c.profile_file, "Use this profile file (no matching)");
  auto* dir = cmd.add_option("--profiles", c.profiles_dir,
                             "Choose the matching profile from this directory (default ROOT/etc/p2pnode/profiles)");
  file->excludes(dir);
  cmd.add_option("--root", c.root, "Treat DIR as the filesystem root (a recorded machine)")
      ->check(CLI::ExistingDirectory);
}

std::optional<Profile> choose_profile(const ProfileChoice& c, const Inventory& inv) {
  if (!c.profile_file.empty()) {
    auto r = profile::load_profile_file(c.profile_file);
    if (!r.profile) {
      std::cerr << "p2pnode: the profile is not valid:\n" << r.diagnostics.format();
      return std::nullopt;
    }
    return r.profile;
  }
  const std::string dir =
      !c.profiles_dir.empty() ? c.profiles_dir : sys::SysRoot(c.root).host_path("/etc/p2pnode/profiles").string();
  auto loaded = profile::load_profiles_dir(dir);
  if (!loaded.error.empty()) {
    std::cerr << "p2pnode: " << loaded.error << "\n";
    return std::nullopt;
  }
  for (const auto& d : loaded.failures) { std::cerr << "p2pnode: skipping an invalid profile:\n" << d.format(); }
  auto chosen = profile::select_profile(loaded.profiles, inv);
  if (!chosen) {
    std::cerr << "p2pnode: choosing a profile from " << dir << ": " << chosen.error().message << "\n";
    return std::nullopt;
  }
  return **chosen;
}

}  // namespace p2pnode::cli
