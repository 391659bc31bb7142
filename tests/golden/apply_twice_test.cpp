// `apply` twice on a copy of every recorded machine, with its profile: the second apply changes
// nothing. Counted two ways: SysRoot's own write counter and every step's `writes` (what passes
// through the seam), and a snapshot of the whole copied tree, every entry's kind, size, mode,
// modification time, link target and bytes, taken after each apply (what reaches the files any
// other way, std::filesystem included). Commands are answered "not installed" by a ScriptedRunner:
// the steps that need them fail the same way both times (a failed step is tried again at the next
// apply, so its commands count as writes again: only the other steps must say 0), and nothing runs
// on this host. Left out of the snapshot: the build lock's holder line (lifecycle/build_lock.cpp),
// p2pnode's own bookkeeping, which names the pid of every apply that takes the lock.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "actions/action.hpp"
#include "core/inventory.hpp"
#include "probe/probe.hpp"
#include "profile/loader.hpp"
#include "profile/select.hpp"
#include "sys/command_runner.hpp"
#include "sys/sysroot.hpp"
#include "unit/source_files.hpp"
#include "unit/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;
using namespace p2pnode::test_files;

namespace {

// Path below the root -> what a write would change: kind, size, mode, mtime, link target, bytes.
std::map<std::string, std::string> snapshot_tree(const fs::path& top) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(top); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path& p = it->path();
    if (p.parent_path() == top / "var/lib/p2pnode/dkms/locks") { continue; }
    const auto st = fs::symlink_status(p);
    std::string d =
        std::to_string(static_cast<int>(st.type())) + " " + std::to_string(static_cast<unsigned>(st.permissions()));
    if (fs::is_symlink(st)) {
      d += " -> " + fs::read_symlink(p).string();
    } else if (fs::is_regular_file(st)) {
      d += " " + std::to_string(fs::file_size(p)) + " " +
           std::to_string(fs::last_write_time(p).time_since_epoch().count()) + " " + slurp(p);
    }
    out[fs::relative(p, top).string()] = d;
  }
  return out;
}

struct TwiceCase {
  std::string fixture;
  std::string profile;  // empty: select from profiles/
  bool first_changes;   // the first apply changes files (ACS, GRUB, BAR sizes, modprobe.d, …)
};

void PrintTo(const TwiceCase& c, std::ostream* os) {
  *os << c.fixture << (c.profile.empty() ? "" : " with " + c.profile);
}

Profile twice_case_profile(const TwiceCase& c, const Inventory& inv) {
  if (c.profile.empty()) {
    auto loaded = profile::load_profiles_dir(kSrc / "profiles");
    auto chosen = profile::select_profile(loaded.profiles, inv);
    if (!chosen.ok()) {
      ADD_FAILURE() << chosen.error().message;
      return {};
    }
    return **chosen;
  }
  auto r = profile::load_profile_file(kSrc / "tests/profiles" / c.profile);
  if (!r.profile) {
    ADD_FAILURE() << r.diagnostics.format();
    return {};
  }
  return *r.profile;
}

// One apply, as `p2pnode apply` runs it: a fresh probe, every action, commands not installed.
std::vector<StepResult> apply_once(const sys::SysRoot& root, const Profile& profile) {
  sys::ScriptedRunner runner;
  actions::ApplyContext ctx{root, runner, profile};
  ctx.once = true;
  return actions::apply_all(ctx);
}

class ApplyTwice : public ::testing::TestWithParam<TwiceCase> {};

TEST_P(ApplyTwice, TheSecondApplyChangesNothing) {
  const TwiceCase& c = GetParam();
  p2pnode::test::TempDir dir{"apply-twice"};
  const fs::path copy = dir / "root";
  fs::copy(kSrc / "tests/fixtures" / c.fixture, copy, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const sys::SysRoot root(copy);
  const Profile profile = twice_case_profile(c, probe::probe_inventory(root));
  ASSERT_FALSE(profile.name.empty());

  const auto before = snapshot_tree(copy);
  apply_once(root, profile);
  const auto after_first = snapshot_tree(copy);
  EXPECT_EQ(before != after_first, c.first_changes) << "whether the first apply changes the copy";
  const auto counted_before = root.write_count();
  const auto second = apply_once(root, profile);
  const auto after_second = snapshot_tree(copy);

  for (const auto& r : second) {
    if (r.outcome == StepOutcome::failed || r.outcome == StepOutcome::refused) { continue; }
    EXPECT_EQ(r.writes, 0u) << r.action << " " << r.subject << ": " << r.message;
  }
  EXPECT_EQ(root.write_count(), counted_before) << "the second apply wrote through SysRoot";
  EXPECT_EQ(after_second.size(), after_first.size()) << "entries made or removed by the second apply";
  for (const auto& [path, was] : after_first) {
    const auto now = after_second.find(path);
    if (now == after_second.end()) {
      ADD_FAILURE() << path << ": removed by the second apply";
    } else if (now->second != was) {
      ADD_FAILURE() << path << ": changed by the second apply";
    }
  }
  for (const auto& [path, now] : after_second) {
    if (!after_first.count(path)) { ADD_FAILURE() << path << ": made by the second apply"; }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, ApplyTwice,
    ::testing::Values(TwiceCase{"h100-1gpu", "", false}, TwiceCase{"tinybox-6x4090", "", true},
                      TwiceCase{"tinybox-6x4090-bios-default", "", true}, TwiceCase{"epyc-8x4090-numa", "", false},
                      TwiceCase{"epyc-8x4090-4nvme", "", false}, TwiceCase{"rtx3090-nvme", "", true},
                      TwiceCase{"rebar-not-resized", "two-4090.yaml", true},
                      TwiceCase{"gpu-link-x8", "two-4090.yaml", false},
                      TwiceCase{"mixed-4090-4060ti", "two-4090.yaml", false}, TwiceCase{"h200-4gpu", "", false},
                      TwiceCase{"epyc-4x5090", "four-5090-550.yaml", true},
                      TwiceCase{"am5-2x5090", "two-5090-am5.yaml", true}),
    [](const ::testing::TestParamInfo<TwiceCase>& param_info) {
      std::string n = param_info.param.fixture;
      for (auto& ch : n) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) { ch = '_'; }
      }
      return n;
    });

}  // namespace
