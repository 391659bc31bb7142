// The limits checked on the parser's events before a node graph exists: cycles, alias bombs, depth.
#include "profile/yaml_limits.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "profile/loader.hpp"
#include "profile/yaml_reader.hpp"

using namespace p2pnode::profile;

namespace {
// A doubling bomb: each level lists the one before `fan` times (10^levels nodes expanded).
std::string alias_bomb(int levels, int fan) {
  std::string s = "l0: &l0 [x]\n";
  for (int i = 1; i <= levels; ++i) {
    s += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < fan; ++k) { s += (k ? ", *l" : "*l") + std::to_string(i - 1); }
    s += "]\n";
  }
  return s;
}
}  // namespace

TEST(YamlLimits, ASelfReferencingAliasIsACycle) {
  const auto b = find_yaml_limit_breach("apiVersion: p2pnode/v1\na: &a [*a, *a]\n");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->line, 2);
  EXPECT_EQ(b->column, 8);  // the first *a
  EXPECT_EQ(b->message,
            "the alias *a refers to the node it is inside (anchored &a at line 2): that is a cycle; an alias may only "
            "repeat a node that ends before it");
}

TEST(YamlLimits, ACycleThroughAMappingIsFoundToo) {
  const auto b = find_yaml_limit_breach("root: &r\n  child:\n    again: *r\n");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->line, 3);
  EXPECT_NE(b->message.find("*r refers to the node it is inside"), std::string::npos) << b->message;
}

TEST(YamlLimits, AnAliasOfAClosedNodeIsFine) {
  EXPECT_EQ(find_yaml_limit_breach("a: &a [1, 2]\nb: *a\nc: &s text\nd: [*s, *s, *a]\n"), std::nullopt);
}

TEST(YamlLimits, ADoublingBombStopsAtTheLimitInOnePass) {
  const std::string bomb = alias_bomb(9, 10);  // 10^9 nodes expanded, about 400 bytes of text
  const auto t0 = std::chrono::steady_clock::now();
  const auto b = find_yaml_limit_breach(bomb);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(
      b->message,
      "aliases expand to more than 10000 nodes (at *l3): an alias bomb? write the values out or use fewer aliases");
  EXPECT_EQ(b->line, 5);                     // l4, the fourth *l3 (2340 + 4 × 2111 nodes)
  EXPECT_LT(took, std::chrono::seconds(2));  // a guard against the walk, not a benchmark: 10^9 would take minutes
  // Under the limit passes: 3 levels of 10 add 20 + 210 + 2110 nodes through aliases.
  EXPECT_EQ(find_yaml_limit_breach(alias_bomb(3, 10)), std::nullopt);
}

TEST(YamlLimits, DepthIsLimited) {
  const auto deep = find_yaml_limit_breach("a: " + std::string(70, '[') + std::string(70, ']') + "\n");
  ASSERT_TRUE(deep.has_value());
  EXPECT_EQ(deep->message, "mappings and lists are nested more than 64 deep");
  EXPECT_EQ(deep->line, 1);
  EXPECT_EQ(deep->column, 67);  // the 64th list: with the root mapping, the 65th level
  EXPECT_EQ(find_yaml_limit_breach("a: " + std::string(60, '[') + std::string(60, ']') + "\n"), std::nullopt);
  YamlLimits tight;
  tight.max_depth = 2;
  EXPECT_TRUE(find_yaml_limit_breach("a: {b: {c: 1}}\n", tight).has_value());
  EXPECT_EQ(find_yaml_limit_breach("a: {b: 1}\n", tight), std::nullopt);
}

TEST(YamlLimits, ASyntaxErrorIsLeftToTheLoader) {
  EXPECT_EQ(find_yaml_limit_breach("a: [1, 2\n"), std::nullopt);
  EXPECT_EQ(find_yaml_limit_breach("a: *nowhere\n"), std::nullopt);
  Diagnostics d("x.yaml");
  EXPECT_FALSE(parse_yaml_text("a: *nowhere\n", d));
  EXPECT_NE(d.list().at(0).message.find("YAML syntax error"), std::string::npos) << d.format();
}

TEST(YamlLimits, TheLoaderRefusesTheCycleWithFileLineAndColumn) {
  // The five lines that crashed `profiles validate` and `check` (SIGSEGV in the grammar walk).
  const auto r = load_profile_text(
      "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata:\n  name: loop\na: &a [*a, *a]\n", "loop.yaml");
  ASSERT_FALSE(r.profile.has_value());
  ASSERT_EQ(r.diagnostics.list().size(), 1u);
  EXPECT_EQ(r.diagnostics.list()[0].format(),
            "loop.yaml:5:8: the alias *a refers to the node it is inside (anchored &a at line 5): that is a cycle; an "
            "alias may only repeat a node that ends before it");
}
