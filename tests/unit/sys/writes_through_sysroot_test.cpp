// Every write p2pnode makes to the machine goes through SysRoot (counted, kept inside the root) or
// is a command's (CommandRunner): no daemon source outside daemon/sys/ calls std::filesystem's
// writers or opens a file for writing itself. Two named exceptions: the build lock's holder file
// (p2pnode's bookkeeping, rewritten by every apply that takes the lock, deliberately not counted)
// and `serve --port-file` (a file the caller names for its own use, not part of the machine).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "unit/source_files.hpp"

namespace {
namespace fs = std::filesystem;

TEST(WritesThroughSysRoot, NoDaemonSourceOutsideSysWritesTheFileSystemItself) {
  const std::regex writer(
      R"((fs::|std::filesystem::)(remove_all|remove|copy_file|copy|rename|create_directories|create_directory|)"
      R"(permissions|resize_file|create_symlink|create_directory_symlink|create_hard_link)\(|std::ofstream|)"
      R"(std::fopen\([^)]*"[wa])");
  const std::set<std::string> allowed = {"daemon/lifecycle/build_lock.cpp:std::filesystem::create_directories(",
                                         "daemon/cli/cmd_serve.cpp:std::ofstream"};
  std::vector<std::string> found;
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(p2pnode::test_files::kSrc / "daemon")) {
    const std::string rel = fs::relative(e.path(), p2pnode::test_files::kSrc).string();
    if (!e.is_regular_file() || rel.rfind("daemon/sys/", 0) == 0) { continue; }
    if (e.path().extension() != ".cpp" && e.path().extension() != ".hpp") { continue; }
    ++files;
    const std::string text = p2pnode::test_files::slurp(e.path());
    for (std::sregex_iterator m(text.begin(), text.end(), writer), end; m != end; ++m) {
      const std::string hit = rel + ":" + m->str();
      // The log stream SysRoot::open_log handed out is a value, not a file opened here.
      if (hit == "daemon/lifecycle/nvidia_core.cpp:std::ofstream" &&
          text.find("std::ofstream log_file = std::move(opened).value();") != std::string::npos) {
        continue;
      }
      if (!allowed.count(hit)) { found.push_back(hit); }
    }
  }
  EXPECT_GT(files, 100u) << "the daemon's sources were not found under " << p2pnode::test_files::kSrc;
  EXPECT_TRUE(found.empty()) << "writes outside SysRoot: " << ::testing::PrintToString(found);
}

}  // namespace
