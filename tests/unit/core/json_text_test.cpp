// json_text: the one JSON writer, which never throws on bytes read from the machine.
#include "core/json_text.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "unit/source_files.hpp"

using p2pnode::json_text;

TEST(JsonText, ReplacesInvalidUtf8InsteadOfThrowing) {
  const nlohmann::json j{{"host", "node\xFF"}, {"serial", "S\xC0\x80X"}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);
  EXPECT_EQ(json_text(j), "{\"host\":\"node\xEF\xBF\xBD\",\"serial\":\"S\xEF\xBF\xBD\xEF\xBF\xBDX\"}");
  EXPECT_EQ(json_text(nlohmann::json{{"a", 1}}, 1), "{\n \"a\": 1\n}");
}

TEST(JsonText, NoOtherWriterInTheDaemon) {
  // Every JSON text the daemon writes goes through json_text; a bare .dump( would throw on the
  // first hostname that is not UTF-8.
  namespace fs = std::filesystem;
  std::vector<std::string> offenders;
  const std::regex bare(R"(\.dump\()");
  for (const auto& e : fs::recursive_directory_iterator(p2pnode::test_files::kSrc / "daemon")) {
    const auto ext = e.path().extension();
    if (ext != ".cpp" && ext != ".hpp") { continue; }
    if (e.path().filename() == "json_text.hpp") { continue; }
    if (std::regex_search(p2pnode::test_files::slurp(e.path()), bare)) { offenders.push_back(e.path().string()); }
  }
  EXPECT_TRUE(offenders.empty()) << "call json_text() instead of .dump() in: " << offenders.front();
}
