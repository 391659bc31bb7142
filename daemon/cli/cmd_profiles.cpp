#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "profile/loader.hpp"

namespace p2pnode::cli {

namespace {
int run_validate(const std::vector<std::string>& paths) {
  int bad = 0, good = 0;
  for (const auto& path : paths) {
    if (std::filesystem::is_directory(path)) {
      auto r = profile::load_profiles_dir(path);
      if (!r.error.empty()) {
        std::cerr << "p2pnode: " << r.error << "\n";
        ++bad;
        continue;
      }
      for (const auto& p : r.profiles) { std::cout << "ok      " << p.source_file << " (" << p.name << ")\n"; }
      for (const auto& d : r.failures) { std::cout << "INVALID " << d.file() << "\n" << d.format(); }
      good += static_cast<int>(r.profiles.size());
      bad += static_cast<int>(r.failures.size());
      if (r.profiles.empty() && r.failures.empty()) {
        std::cerr << "p2pnode: " << path << " holds no *.yaml profiles\n";
        ++bad;
      }
    } else {
      auto r = profile::load_profile_file(path);
      if (r.profile) {
        std::cout << "ok      " << path << " (" << r.profile->name << ")\n";
        ++good;
      } else {
        std::cout << "INVALID " << path << "\n" << r.diagnostics.format();
        ++bad;
      }
    }
  }
  std::cout << good << " valid, " << bad << " invalid\n";
  return bad ? kUsage : kOk;
}
}  // namespace

void register_profiles(CLI::App& app) {
  auto* cmd = app.add_subcommand("profiles", "Work with node profiles");
  cmd->require_subcommand(1);
  auto paths = std::make_shared<std::vector<std::string>>();
  auto* validate = cmd->add_subcommand("validate", "Validate profile files or directories");
  validate->add_option("PATH", *paths, "Profile files or directories")->required();
  validate->callback([paths] { throw CLI::RuntimeError(run_validate(*paths)); });
}

}  // namespace p2pnode::cli
