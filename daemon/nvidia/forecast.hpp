#pragma once
// Known breakages forecast for the coming DKMS build, before any build: the breakage table against
// each kernel the build is for (its release and header tests, as probed), the builtin patches the
// profile names, and the tree's own source where it was read (else its version decides). Pure but
// for read_source_tests, which reads a tree through the SysRoot.
#include <map>
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "core/profile.hpp"
#include "nvidia/breakage.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::nvidia {

// The builtin patches a module source names ({builtin: …} entries of its patches).
std::vector<std::string> builtin_patches_of(const ModuleSource& km);

// One line per kernel with headers that lacks the profile's module and whose build a known
// breakage will stop, where the profile does not name its fix: "6.12.117+deb13-amd64: known
// breakage X will stop the build of …; fix: …". Empty: nothing known stands in the way.
// source_tests: the tree's source tests (read_source_tests); null: those of the staged tree in
// /usr/src/<name>-<version> when the inventory has it, else the version decides.
std::vector<std::string> build_stops(const Inventory& inv, const DriverSpec& d,
                                     const std::map<std::string, bool>* source_tests = nullptr);

// The build-stage breakages that stop a build (not fixed by the profile), in table order, said in
// one sentence: the first one's cause and fix, the others by id, and the first NVIDIA release that
// none of them stops ("no NVIDIA release is known to build there" when one has no known fix, and
// then the newest release with builtins where that builds: newest_with_builtins on header_tests, the
// kernel's).
std::string describe_stops(const std::vector<const PredictedBreakage*>& stops, std::string_view driver_version,
                           std::string_view kernel_release, const std::map<std::string, bool>& header_tests);

// Where the newest release read (kNewestReleaseChecked) stops on this kernel only on entries that
// have a builtin patch: " <release> with the builtin patches a, b builds there (...)."; else "".
std::string newest_with_builtins(std::string_view kernel_release, const std::map<std::string, bool>& header_tests);

// The staged tree's source tests from the inventory (/usr/src/<name>-<version>), or null.
const std::map<std::string, bool>* staged_source_tests(const Inventory& inv, const DriverSpec& d);
// The source tests `check` forecasts from: the staged tree's, else those of the profile's tree where
// it lies (inv.nvidia.profile_tree); tests null and where empty when neither was read.
struct TreeSource {
  const std::map<std::string, bool>* tests = nullptr;
  std::string where;  // the folder read
};
TreeSource tree_source_tests(const Inventory& inv, const DriverSpec& d);

// The build-stage entries this kernel has (its release range and header tests), whatever the
// driver version: what a release must get past to build there as released.
std::vector<const Breakage*> build_entries_on_kernel(std::string_view kernel_release,
                                                     const std::map<std::string, bool>& header_tests);

// Where no NVIDIA release is known to build past `stops` on this kernel: which entries no release is
// recorded to fix, and the newest release read here that builds there with builtins, if any.
std::string no_release_past(const std::vector<const Breakage*>& stops, std::string_view kernel_release,
                            const std::map<std::string, bool>& header_tests);

// The breakage table's source tests on the tree at `tree` (in-root): breakage id -> affected.
std::map<std::string, bool> read_source_tests(const sys::SysRoot& root, const std::string& tree);

}  // namespace p2pnode::nvidia
