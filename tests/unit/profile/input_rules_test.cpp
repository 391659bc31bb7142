// The grammar of profile strings as the loader applies it (profile/input_rules.hpp): each rule names
// the field, what it expected and what it found. tests/profiles/hostile/ runs the same through
// `p2pnode check`; core/grammar_test.cpp tests the rules themselves.
#include "profile/input_rules.hpp"

#include <gtest/gtest.h>

#include "profile/loader.hpp"

namespace p2pnode::profile {
namespace {

const std::string kHead = "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata:\n  name: t\n";
const std::string kSha = "3c56fc1a3f0ee3de9a9e4bb20b3f5c33c224be266906c5e879d80eb3ec71086f";

std::string first_error(const std::string& body) {
  const auto r = load_profile_text(kHead + body, "p.yaml");
  if (r.profile) { return ""; }
  return r.diagnostics.list().front().key_path + ": " + r.diagnostics.list().front().message;
}

TEST(InputRules, ControlCharactersAnywhereAreRefused) {
  EXPECT_EQ(first_error("match:\n  hostname: \"a\\x01b\"\n"),
            "match.hostname: expected no control characters, found U+0001 at byte 1 of 'a\\x01b'");
  EXPECT_EQ(first_error("selftest:\n  cases: [\"p2p\\nx\"]\n"),
            "selftest.cases[0]: expected no control characters, found U+000A (a newline) at byte 3 of 'p2p\\nx'");
  // A key's control character is shown escaped in the path too.
  EXPECT_EQ(
      first_error("driver:\n  version: 550.90.07\n  options:\n    \"NVreg_A\\tB\": 1\n"),
      "driver.options.NVreg_A\\tB: expected no control characters, found U+0009 (a tab) at byte 7 of 'NVreg_A\\tB'");
}

TEST(InputRules, ADescriptionMayHoldNewlines) {
  const auto r = load_profile_text(kHead + "  description: |\n    two\n    lines\n", "p.yaml");
  ASSERT_TRUE(r.profile) << r.diagnostics.format();
  EXPECT_EQ(r.profile->description, "two\nlines\n");
}

TEST(InputRules, EachFieldHasItsGrammar) {
  const std::string src = "    source: {path: /srv/a.tar.xz, sha256: " + kSha + "}\n";
  EXPECT_NE(first_error("driver:\n  version: 550.90.07\n  kernel_module:\n    name: Nvidia\n" + src)
                .find("driver.kernel_module.name: expected a DKMS package name: a lowercase letter or digit"),
            std::string::npos);
  EXPECT_NE(first_error("driver:\n  version: 550.90.07\n  options:\n    NVreg_A: \"1;x y\"\n")
                .find("driver.options.NVreg_A: expected a module option value"),
            std::string::npos);
  EXPECT_NE(first_error("driver:\n  version: 550.90.07\n  reload:\n    stop_units: [nvidia-persistenced]\n")
                .find("driver.reload.stop_units[0]: expected a systemd unit name"),
            std::string::npos);
  EXPECT_NE(
      first_error("driver:\n  version: 550.90.07\n  userspace:\n    installer: {url: \"https://h/a'b.run\", sha256: " +
                  kSha + "}\n")
          .find("driver.userspace.installer.url: expected an http:// or https:// URL"),
      std::string::npos);
  EXPECT_NE(
      first_error("driver:\n  version: 550.90.07\n  kernel_module:\n    source: {git: \"-c\", sha256: " + kSha + "}\n")
          .find("driver.kernel_module.source.git: expected a git repository"),
      std::string::npos);
  EXPECT_NE(first_error(
                "driver:\n  version: 550.90.07\n  kernel_module:\n    signing: {key: /k/../k, certificate: /c}\n" + src)
                .find("driver.kernel_module.signing.key: expected the module signing key as an absolute path"),
            std::string::npos);
  EXPECT_NE(first_error("nvme:\n  drives:\n    - serial: S1\n      pair_gpu: gpu0\n")
                .find("nvme.drives[0].pair_gpu: expected the GPU's PCI address"),
            std::string::npos);
  // And a profile that follows every rule loads.
  const auto good = load_profile_text(
      kHead +
          "driver:\n  version: 550.90.07\n  options:\n    NVreg_RegistryDwords: \"RMForceP2PType=1;RMPcieP2PType=2\"\n"
          "  reload:\n    stop_units: [nvidia-persistenced.service]\n  kernel_module:\n    name: nvidia-p2p\n"
          "    signing: {key: /var/lib/dkms/mok.key, certificate: /var/lib/dkms/mok.pub}\n" +
          src + "    patches:\n      - {url: \"https://h/p/0001-fix.patch?sig=a%2Fb\", sha256: " + kSha + "}\n",
      "p.yaml");
  EXPECT_TRUE(good.profile) << good.diagnostics.format();
}

TEST(InputRules, Printable) {
  EXPECT_EQ(printable("a\nb\x1b"), "a\\nb\\x1b");
  EXPECT_EQ(printable(std::string(300, 'a')).size(), 200u + std::string("…").size());
}

}  // namespace
}  // namespace p2pnode::profile

// A malformed url: or git: that carries a password: refused, and the message names the value without
// the password (it went to check's output and the journal).
TEST(InputRules, ARefusedUrlsPasswordNeverReachesTheMessage) {
  const auto r = p2pnode::profile::load_profile_text(
      "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata: {name: leak}\n"
      "driver:\n  version: 550.90.07\n  kernel_module:\n    source:\n"
      "      git: \"https://deploy:s3cr3t-token@git.example/tree.git$x\"\n"
      "      sha256: 0000000000000000000000000000000000000000000000000000000000000000\n",
      "leak.yaml");
  ASSERT_FALSE(r.profile);
  const std::string text = r.diagnostics.format();
  EXPECT_EQ(text.find("s3cr3t-token"), std::string::npos) << text;
  EXPECT_NE(text.find("driver.kernel_module.source.git: expected"), std::string::npos) << text;
}
