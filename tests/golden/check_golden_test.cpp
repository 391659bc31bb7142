// Golden tests: `check` on every fixture against the bundled profiles (or a test profile), table
// and JSON, and `plan`'s JSON (what apply would do there). P2PNODE_TEST_ACCEPT=1 rewrites the golden files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "actions/action.hpp"
#include "checks/check.hpp"
#include "core/plan.hpp"
#include "probe/probe.hpp"
#include "profile/loader.hpp"
#include "profile/select.hpp"
#include "render/report.hpp"
#include "unit/source_files.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;

namespace {
using p2pnode::test_files::kSrc;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_golden(const fs::path& golden, const std::string& actual) {
  if (std::getenv("P2PNODE_TEST_ACCEPT")) {
    std::ofstream(golden, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing: run with P2PNODE_TEST_ACCEPT=1";
  EXPECT_EQ(slurp(golden), actual) << "output differs from " << golden
                                   << " (P2PNODE_TEST_ACCEPT=1 accepts the new output)";
}

struct Case {
  std::string fixture;
  std::string profile;  // empty: select from profiles/
  int exit_code;        // what `p2pnode check` would return: 0 pass, 1 errors
};

// ctest lists each case by this, not by its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.fixture << (c.profile.empty() ? "" : " with " + c.profile); }

class CheckGolden : public ::testing::TestWithParam<Case> {};

TEST_P(CheckGolden, MatchesGoldenFiles) {
  const Case& c = GetParam();
  const sys::SysRoot root(kSrc / "tests/fixtures" / c.fixture);
  Inventory inv = probe::probe_inventory(root);
  Profile profile;
  if (c.profile.empty()) {
    auto loaded = profile::load_profiles_dir(kSrc / "profiles");
    ASSERT_TRUE(loaded.failures.empty());
    auto chosen = profile::select_profile(loaded.profiles, inv);
    ASSERT_TRUE(chosen.ok()) << chosen.error().message;
    profile = **chosen;
  } else {
    auto r = profile::load_profile_file(kSrc / "tests/profiles" / c.profile);
    ASSERT_TRUE(r.profile) << r.diagnostics.format();
    profile = *r.profile;
  }
  const auto findings = checks::run_all_checks(profile, inv);
  EXPECT_EQ(worst(findings) == Severity::error ? 1 : 0, c.exit_code);
  const fs::path dir = kSrc / "tests/golden" / c.fixture;
  fs::create_directories(dir);
  expect_golden(dir / "check.txt", render::render_check_table(inv, profile.name, findings));
  expect_golden(dir / "check-verbose.txt", render::render_check_table(inv, profile.name, findings, true));
  expect_golden(dir / "check.json", render::check_report_json(inv, profile.name, findings).dump(2) + "\n");
  // As `p2pnode plan` builds it (without Secure Boot's modinfo, which these fixtures do not need).
  probe::use_profile_signing(root, profile, inv);
  probe::use_profile_tree(root, profile, inv);
  expect_golden(dir / "plan.json", to_json(actions::plan_all(profile, inv, root)).dump(2) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CheckGolden,
                         ::testing::Values(Case{"h100-1gpu", "", 0}, Case{"tinybox-6x4090", "", 0},
                                           Case{"tinybox-6x4090-bios-default", "", 1}, Case{"epyc-8x4090-numa", "", 0},
                                           Case{"epyc-8x4090-4nvme", "", 0}, Case{"rtx3090-nvme", "", 0},
                                           Case{"rebar-not-resized", "two-4090.yaml", 1},
                                           Case{"gpu-link-x8", "two-4090.yaml", 1},
                                           Case{"mixed-4090-4060ti", "two-4090.yaml", 1}, Case{"h200-4gpu", "", 0},
                                           Case{"epyc-4x5090", "four-5090-550.yaml", 1},
                                           Case{"am5-2x5090", "two-5090-am5.yaml", 0}),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string n = param_info.param.fixture;
                           for (auto& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) { ch = '_'; }
                           }
                           return n;
                         });

}  // namespace
