#pragma once
// An NVIDIA driver release as text: "550.90.07", "570.190", "610.57.04" (two to four decimal numbers
// separated by single dots). The one decoder of it: the profile loader checks driver.version with it,
// and the branch, the ordering and the breakage table's release claims all come from here.
// Pure, no I/O.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode {

struct DriverVersion {
  std::vector<int> numbers;  // {550, 90, 7}
  std::string text;          // as written: "550.90.07"
  int branch() const { return numbers.front(); }

  // nullopt unless two to four numbers of digits separated by single dots (each below 1,000,000).
  static std::optional<DriverVersion> parse(std::string_view s);
};

inline bool is_driver_version(std::string_view s) { return DriverVersion::parse(s).has_value(); }

// The branch (the first number) of a release; 0 when `s` is not a driver version.
int driver_branch_of(std::string_view s);

// -1, 0, 1, number by number ("570.190" > "570.86.16"; a missing number counts as 0). Text that is
// not a driver version sorts before every version (and compares equal only to the same text).
int compare_driver_versions(std::string_view a, std::string_view b);

}  // namespace p2pnode
