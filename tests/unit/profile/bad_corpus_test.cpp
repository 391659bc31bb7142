// The corpus of bad profiles: each tests/profiles/bad/<case>.yaml must fail to load, and its first
// diagnostic must be exactly the line in <case>.expected (file:line:col: key.path: message).
// P2PNODE_TEST_ACCEPT=1 rewrites the .expected files from what the loader says now.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "profile/loader.hpp"
#include "unit/source_files.hpp"
#include "unit/temp_dir.hpp"

namespace fs = std::filesystem;
using p2pnode::profile::load_profile_file;
using p2pnode::profile::load_profile_text;

namespace {

using p2pnode::test_files::kSrc;
const fs::path kBadDir = kSrc / "tests/profiles/bad";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Diagnostics name the file as given; show it relative to the repository root.
std::string relative(std::string line) {
  const std::string prefix = kSrc.string() + "/";
  if (line.rfind(prefix, 0) == 0) { line.erase(0, prefix.size()); }
  return line;
}

std::vector<fs::path> bad_cases() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kBadDir)) {
    if (e.path().extension() == ".yaml") { out.push_back(e.path()); }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(BadProfileCorpus, EveryCaseGivesItsExpectedFirstDiagnostic) {
  const bool accept = std::getenv("P2PNODE_TEST_ACCEPT") != nullptr;
  const auto cases = bad_cases();
  ASSERT_GE(cases.size(), 20u) << "the corpus is missing from " << kBadDir;
  for (const auto& yaml : cases) {
    SCOPED_TRACE(yaml.filename().string());
    const auto r = load_profile_file(yaml);
    ASSERT_FALSE(r.profile.has_value()) << "a bad profile loaded";
    ASSERT_FALSE(r.diagnostics.empty());
    const std::string got = relative(r.diagnostics.list().front().format());
    fs::path expected_file = yaml;
    expected_file.replace_extension(".expected");
    if (accept) {
      std::ofstream(expected_file) << got << "\n";
      continue;
    }
    ASSERT_TRUE(fs::exists(expected_file)) << "no " << expected_file << "; run with P2PNODE_TEST_ACCEPT=1";
    std::string want = read_file(expected_file);
    while (!want.empty() && (want.back() == '\n' || want.back() == '\r')) { want.pop_back(); }
    EXPECT_EQ(got, want);
  }
}

TEST(BadProfileCorpus, EveryExpectedFileHasItsCase) {
  for (const auto& e : fs::directory_iterator(kBadDir)) {
    if (e.path().extension() != ".expected") { continue; }
    fs::path yaml = e.path();
    yaml.replace_extension(".yaml");
    EXPECT_TRUE(fs::exists(yaml)) << e.path() << " has no .yaml beside it";
  }
}

// A 10 MB file is refused before YAML parsing, never read into a parser (generated, not committed).
TEST(BadProfileCorpus, HugeFileIsRefusedWithItsSize) {
  const p2pnode::test::TempDir scratch("huge");
  const fs::path dir = scratch.path();
  fs::create_directories(dir);
  const fs::path file = dir / "huge.yaml";
  {
    std::ofstream out(file, std::ios::binary);
    out << "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata:\n  name: huge\n";
    const std::string filler = "# " + std::string(1022, 'x') + "\n";
    for (int i = 0; i < 10 * 1024; ++i) { out << filler; }
  }
  const auto size = fs::file_size(file);
  const auto r = load_profile_file(file);
  ASSERT_FALSE(r.profile);
  ASSERT_EQ(r.diagnostics.list().size(), 1u);
  EXPECT_EQ(r.diagnostics.list().front().format(),
            file.string() + ": the file is " + std::to_string(size) + " bytes; a profile is at most 1048576 bytes");
  // The same limit holds for text handed over directly (the daemon's API, the fuzzer).
  const auto t = load_profile_text(read_file(file), "huge.yaml");
  ASSERT_FALSE(t.profile);
  EXPECT_EQ(t.diagnostics.list().front().format(),
            "huge.yaml: the file is " + std::to_string(size) + " bytes; a profile is at most 1048576 bytes");
}

TEST(BadProfileCorpus, JustUnderTheLimitStillLoads) {
  std::string text = "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata:\n  name: big\n";
  const std::string filler = "# " + std::string(1000, 'y') + "\n";
  while (text.size() + filler.size() < (1u << 20)) { text += filler; }
  const auto r = load_profile_text(text, "big.yaml");
  ASSERT_TRUE(r.profile) << r.diagnostics.format();
  EXPECT_EQ(r.profile->name, "big");
}

TEST(BadProfileCorpus, MissingFileSaysSo) {
  const auto r = load_profile_file(kBadDir / "no-such-profile.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_EQ(relative(r.diagnostics.list().front().format()), "tests/profiles/bad/no-such-profile.yaml: no such file");
}

TEST(BadProfileCorpus, ADirectoryIsNotAProfile) {
  const auto r = load_profile_file(kBadDir);
  ASSERT_FALSE(r.profile);
  EXPECT_EQ(relative(r.diagnostics.list().front().format()), "tests/profiles/bad: not a regular file");
}

// Every problem in a file is reported, not only the first.
TEST(BadProfileCorpus, AllProblemsAreReported) {
  const auto r = load_profile_text(
      "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata:\n  name: x\n"
      "platform:\n  iommu: of\n  gpu_vram: 24\n  acs: enabled\n",
      "many.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_EQ(r.diagnostics.list().size(), 3u) << r.diagnostics.format();  // iommu, gpu_vram (no unit), acs
}
