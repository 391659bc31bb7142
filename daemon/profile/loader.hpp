#pragma once
// Loads NodeProfiles from YAML text, files and directories, with every problem reported.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "profile/yaml_reader.hpp"

namespace p2pnode::profile {

struct LoadResult {
  std::optional<Profile> profile;  // set only when there are no diagnostics
  Diagnostics diagnostics;
};

LoadResult load_profile_text(std::string_view text, const std::string& file_name);
LoadResult load_profile_file(const std::filesystem::path& file);

struct DirLoadResult {
  std::vector<Profile> profiles;
  std::vector<Diagnostics> failures;  // one per bad file
  std::string error;                  // the directory itself could not be read
};
// Every *.yaml and *.yml in dir (not recursive), sorted by name; duplicate names are an error.
DirLoadResult load_profiles_dir(const std::filesystem::path& dir);

}  // namespace p2pnode::profile
