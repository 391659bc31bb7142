// The strict reader's helpers: suggestions, PCI ids, node descriptions, the cheap text checks.
#include "profile/yaml_reader.hpp"

#include <gtest/gtest.h>

using namespace p2pnode::profile;

TEST(YamlReader, ClosestSuggestsTyposOnly) {
  const std::vector<std::string_view> keys{"platform", "match", "driver", "nvme", "selftest"};
  EXPECT_EQ(closest("platfrom", keys), "platform");
  EXPECT_EQ(closest("Platform", keys), "platform");
  EXPECT_EQ(closest("drivers", keys), "driver");
  EXPECT_EQ(closest("nvm", keys), "nvme");
  EXPECT_EQ(closest("zzzzzzzzzz", keys), std::nullopt);
  EXPECT_EQ(closest("", keys), std::nullopt);
}

TEST(YamlReader, PciIds) {
  EXPECT_EQ(parse_pci_id("0x10de"), 0x10de);
  EXPECT_EQ(parse_pci_id("0X10DE"), 0x10de);
  EXPECT_EQ(parse_pci_id("10de"), 0x10de);
  EXPECT_EQ(parse_pci_id("8836"), 8836);  // all digits: decimal (YAML turned 0x2284 into 8836)
  EXPECT_EQ(parse_pci_id("0x1ffff"), std::nullopt);
  EXPECT_EQ(parse_pci_id("nvidia"), std::nullopt);
  EXPECT_EQ(parse_pci_id(""), std::nullopt);
  EXPECT_EQ(parse_pci_id("0x"), std::nullopt);
  EXPECT_EQ(parse_pci_id("-1"), std::nullopt);
  EXPECT_EQ(parse_pci_id("65536"), std::nullopt);
}

TEST(YamlReader, DescribeNode) {
  EXPECT_EQ(describe_node(YAML::Load("{a: 1}")), "a mapping");
  EXPECT_EQ(describe_node(YAML::Load("[1, 2]")), "a list");
  EXPECT_EQ(describe_node(YAML::Load("abc")), "'abc'");
  EXPECT_EQ(describe_node(YAML::Load("~")), "nothing (null)");
}

TEST(YamlReader, CheapChecksComeFirst) {
  Diagnostics d("x.yaml");
  EXPECT_FALSE(parse_yaml_text("a: 1\n  \tb: 2\n", d));
  ASSERT_EQ(d.list().size(), 1u);
  EXPECT_EQ(d.list()[0].format(), "x.yaml:2:3: a tab is used for indentation; YAML indents with spaces only");
  Diagnostics nul("y.yaml");
  EXPECT_FALSE(parse_yaml_text(std::string_view("a: 1\nb: \0\n", 10), nul));
  EXPECT_EQ(nul.list()[0].format(), "y.yaml:2:4: the file contains a NUL byte: it is binary, not YAML text");
  Diagnostics big("z.yaml");
  EXPECT_FALSE(parse_yaml_text(std::string(100, '#'), big, 64));
  EXPECT_EQ(big.list()[0].format(), "z.yaml: the file is 100 bytes; a profile is at most 64 bytes");
  Diagnostics ok("ok.yaml");
  EXPECT_TRUE(parse_yaml_text("a: \"caf\xc3\xa9\"  # tab\tafter text is fine\n", ok));
  EXPECT_TRUE(ok.empty());
}

TEST(YamlReader, DeepNestingIsRefusedNotACrash) {
  // The limit (64 levels, profile/yaml_limits.hpp) comes long before yaml-cpp's own (2000).
  Diagnostics flow("flow.yaml");
  EXPECT_FALSE(parse_yaml_text("a: " + std::string(100000, '[') + std::string(100000, ']') + "\n", flow));
  ASSERT_EQ(flow.list().size(), 1u);
  EXPECT_EQ(flow.list()[0].format(), "flow.yaml:1:67: mappings and lists are nested more than 64 deep");
  Diagnostics fine("fine.yaml");
  EXPECT_TRUE(parse_yaml_text("a: " + std::string(60, '[') + std::string(60, ']') + "\n", fine));
}

TEST(YamlReader, Utf8IsHeldToRfc3629) {
  for (const std::string bad : {"a: \"S\xC0\x80X\"\n", "a: \"\xED\xA0\x80\"\n", "a: \"\xF4\x90\x80\x80\"\n"}) {
    Diagnostics d("u.yaml");
    EXPECT_FALSE(parse_yaml_text(bad, d)) << bad;
    ASSERT_EQ(d.list().size(), 1u);
    EXPECT_NE(d.list()[0].format().find("u.yaml:1:"), std::string::npos) << d.format();
    EXPECT_NE(d.list()[0].message.find("not valid UTF-8"), std::string::npos) << d.format();
  }
}
