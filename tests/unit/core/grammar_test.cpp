// The input grammar and the one shell-quoting function (core/grammar.hpp); the round trip through
// real bash, and through DKMS's own safe_source, of every shell-read file p2pnode writes.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "actions/signing_key.hpp"
#include "core/grammar.hpp"
#include "dkms/conf.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::grammar {
namespace {
namespace fs = std::filesystem;

TEST(Grammar, ControlCharacters) {
  EXPECT_FALSE(find_control_char("plain text é"));
  EXPECT_EQ(find_control_char("a\nb"), 1u);
  EXPECT_EQ(find_control_char("ab\x7f"), 2u);
  EXPECT_EQ(find_control_char("\x1b[2J"), 0u);
  EXPECT_FALSE(find_control_char("a\nb\tc", "\n\t"));
  EXPECT_EQ(describe_control_char("\n", 0), "U+000A (a newline)");
  EXPECT_EQ(find_control_char("x\xC2\x85y"), 1u);  // NEL
  EXPECT_EQ(find_control_char("\xC2\x9B"
                              "2J"),
            0u);                                        // CSI
  EXPECT_FALSE(find_control_char("\xC2\xA0\xC2\xA9"));  // no-break space, copyright sign
  EXPECT_EQ(describe_control_char("x\xC2\x85y", 1), "U+0085 (a C1 next-line)");
  EXPECT_EQ(describe_control_char("\xC2\x9B", 0), "U+009B (a C1 control)");
}

TEST(Grammar, DkmsNames) {
  for (auto ok : {"nvidia-p2p", "gdrdrv", "nvidia", "p2ptest", "a", "0x", "nvidia-p2p_2.0+x"}) {
    EXPECT_TRUE(is_dkms_name(ok)) << ok;
  }
  for (auto bad : {"", "-x", ".x", "Nvidia", "../../etc", "a/b", "a..b", "a b", "a$(id)", "a\nb", "a'b", "_x"}) {
    EXPECT_FALSE(is_dkms_name(bad)) << bad;
  }
  EXPECT_FALSE(is_dkms_name(std::string(65, 'a')));
}

TEST(Grammar, NvregKeysAndValues) {
  EXPECT_TRUE(is_nvreg_key("NVreg_EnableGpuFirmware"));
  EXPECT_TRUE(is_nvreg_key("NVreg_Registry_Dwords2"));
  for (auto bad : {"NVreg_", "nvreg_X", "RMForceP2PType", "NVreg_A B", "NVreg_A\ninstall", "NVreg_A=1", "NVreg_A-b"}) {
    EXPECT_FALSE(is_nvreg_key(bad)) << bad;
  }
  for (auto ok : {"1", "0x10", "RMForceP2PType=1;RMPcieP2PType=2", "\"RMForceP2PType=1\"", "/var/tmp", "a,b:c@d+e"}) {
    EXPECT_TRUE(is_nvreg_value(ok)) << ok;
  }
  for (auto bad : {"", "1 NVreg_B=2", "1\ninstall nvidia /bin/sh", "a#b", "a'b", "a\\b", "a\tb", "$(id)"}) {
    EXPECT_FALSE(is_nvreg_value(bad)) << bad;
  }
}

TEST(Grammar, UnitNames) {
  for (auto ok :
       {"nvidia-persistenced.service", "dcgm.service", "getty@tty1.service", "a\\x2db.mount", "slurmd.service"}) {
    EXPECT_TRUE(is_unit_name(ok)) << ok;
  }
  for (auto bad : {"", "-x.service", "--root=/tmp.service", "nvidia-persistenced", "a b.service", ".service",
                   "a;b.service", "a\n.service", "a.servic"}) {
    EXPECT_FALSE(is_unit_name(bad)) << bad;
  }
}

TEST(Grammar, DebianPackages) {
  EXPECT_TRUE(is_debian_package("nvidia-driver"));
  EXPECT_TRUE(is_debian_package("libstdc++6"));
  for (auto bad : {"", "a", "-x", "Nvidia", "a b", "a_b"}) { EXPECT_FALSE(is_debian_package(bad)) << bad; }
}

TEST(Grammar, Urls) {
  for (auto ok : {"https://download.nvidia.com/x/NVIDIA-Linux-x86_64-550.90.07.run", "http://10.0.0.1:8080/a.tar.xz",
                  "https://h/p?X-Amz-Signature=ab%2Fcd&x=1#frag", "https://[::1]/a"}) {
    EXPECT_TRUE(is_http_url(ok)) << ok;
  }
  for (auto bad :
       {"", "https://", "https:///etc/passwd", "file:///etc/shadow", "ftp://h/a", "https://h/$(id)", "https://h/a b",
        "https://h/a'b", "https://h/a\"b", "https://h/a`b", "https://h/a\\b", "https://h/a\nb", "-https://h"}) {
    EXPECT_FALSE(is_http_url(bad)) << bad;
  }
}

TEST(Grammar, GitSourcesAndRefs) {
  for (auto ok : {"https://github.com/tinygrad/open-gpu-kernel-modules", "git@github.com:NVIDIA/gdrcopy.git",
                  "ssh://git@h/x.git", "file:///srv/repo", "/srv/repo.git", "git://h/x"}) {
    EXPECT_TRUE(is_git_source(ok)) << ok;
  }
  for (auto bad : {"", "--upload-pack=touch /tmp/x", "-u", "https://", "relative/repo", "/srv/../etc",
                   "https://h/$(id)", "a b:c"}) {
    EXPECT_FALSE(is_git_source(bad)) << bad;
  }
  for (auto ok : {"550.90.07-p2p", "main", "release/2.6", "v2.6"}) { EXPECT_TRUE(is_git_ref(ok)) << ok; }
  for (auto bad : {"", "-x", "--upload-pack=x", "a..b", "a//b", "a/", "a.", "a.lock", "a/.b", "a b", "a@{1}", ".x"}) {
    EXPECT_FALSE(is_git_ref(bad)) << bad;
  }
}

// git's <transport>::<address> form runs a remote helper; ext:: runs the program it names and fd::
// talks over a descriptor: no transport prefix is a repository here. An IPv6 host's "::" is not one.
TEST(Grammar, GitSourcesWithATransportPrefixAreRefused) {
  for (auto bad :
       {"ext::sh -c touch% /tmp/x", "ext::/var/tmp/evil", "fd::7", "fd::7,8", "persistent-https::https://h/x.git",
        "foo::bar", "ssh::x", "file::/srv/repo", "git+ext::x", "EXT::/x"}) {
    EXPECT_FALSE(is_git_source(bad)) << bad;
  }
  for (auto ok : {"https://[::1]/repo.git", "ssh://git@[fe80::1]/x.git", "git@github.com:NVIDIA/gdrcopy.git",
                  "https://h.example/a::b.git"}) {
    EXPECT_TRUE(is_git_source(ok)) << ok;
  }
}

TEST(Grammar, SafePathsAndFileNames) {
  for (auto ok : {"/", "/var/lib/dkms/mok.key", "/etc/p2pnode/keys/mok-2026.der", "/srv/a+b@c:d"}) {
    EXPECT_TRUE(is_safe_absolute_path(ok)) << ok;
  }
  for (auto bad : {"", "relative", "/a/../b", "/a/./b", "/..", "/a\"b", "/a'b", "/a b", "/a$b", "/a\nb", "/a\\b"}) {
    EXPECT_FALSE(is_safe_absolute_path(bad)) << bad;
  }
  EXPECT_TRUE(is_safe_file_name("01-fix.patch"));
  for (auto bad : {"", ".", "..", "-rf.patch", "a/b", "$(id).patch", "a'b"}) {
    EXPECT_FALSE(is_safe_file_name(bad)) << bad;
  }
}

TEST(Grammar, StaysUnder) {
  EXPECT_TRUE(stays_under("/usr/src", "/usr/src/nvidia-p2p-550.90.07"));
  EXPECT_TRUE(stays_under("/usr/src/", "/usr/src/a/b"));
  EXPECT_FALSE(stays_under("/usr/src", "/usr/src"));
  EXPECT_FALSE(stays_under("/usr/src", "/usr/src/../../etc-550"));
  EXPECT_FALSE(stays_under("/usr/src", "/usr/srcx/a"));
  EXPECT_FALSE(stays_under("/usr/src", "usr/src/a"));
  EXPECT_FALSE(stays_under("/var/lib/p2pnode/dkms", "/var/lib/p2pnode/dkms/../../../etc/x.json"));
}

TEST(Grammar, RedactUrl) {
  EXPECT_EQ(redact_url("https://h.example/a/NVIDIA.run"), "https://h.example/a/NVIDIA.run");
  EXPECT_EQ(redact_url("https://h.example/a.run?X-Amz-Signature=abc&x=1"), "https://h.example/a.run?…");
  EXPECT_EQ(redact_url("https://user:pw@h.example/a.run#f"), "https://h.example/a.run?…");
  EXPECT_EQ(redact_url("https://user:pw@h.example/a@b.run"), "https://h.example/a@b.run");
  // git's own messages repeat the URL it was given: the user info of every URL in a text goes.
  EXPECT_EQ(redact_userinfo("fatal: unable to access 'https://p2p:s3cret@git.example/x.git/': Could not resolve host"),
            "fatal: unable to access 'https://git.example/x.git/': Could not resolve host");
  EXPECT_EQ(redact_userinfo("a https://u:p@h1 and http://t@h2/x?y=z@w, git@github.com:x/y.git"),
            "a https://h1 and http://h2/x?y=z@w, git@github.com:x/y.git");
  EXPECT_EQ(redact_userinfo("no url here @ all ://"), "no url here @ all ://");
}

TEST(Grammar, SurvivesDkmsResource) {
  for (auto ok : {"nvidia-p2p", "kernel-open/", "^(6\\.(10|[2-9][0-9])|7\\.[0-9]+)([.-]|$)", "it's", "/usr/src/a b"}) {
    EXPECT_TRUE(survives_dkms_resource(ok)) << ok;
  }
  for (auto bad : {"$(id)", "${x}", "$x", "a`id`", "a\"b", "a\\$b", "a\\", "a\nb", "a\\\\b"}) {
    EXPECT_FALSE(survives_dkms_resource(bad)) << bad;
  }
}

// Hostile values that each would run a command or change a line were they not quoted.
const std::vector<std::string> kHostile = {"plain",
                                           "$(touch /tmp/p2pnode-grammar-ran)",
                                           "`touch /tmp/p2pnode-grammar-ran`",
                                           "a'b",
                                           "'",
                                           "''\\''",
                                           "a\"b\\c",
                                           "${HOME}",
                                           "x; touch /tmp/p2pnode-grammar-ran",
                                           "line1\nline2",
                                           "$'\\x41'",
                                           "!!",
                                           "*",
                                           "~root",
                                           ""};

std::string run_bash(const std::string& script_file, const std::string& script) {
  std::ofstream(script_file) << script;
  const std::string cmd = "bash --norc --noprofile " + script_file;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) { out.append(buf, n); }
  ::pclose(p);
  return out;
}

TEST(ShellQuote, BashReadsEveryHostileValueBackUnchanged) {
  const p2pnode::test::TempDir scratch("grammar");
  const fs::path dir = scratch.path();
  fs::remove("/tmp/p2pnode-grammar-ran");
  for (const auto& v : kHostile) {
    SCOPED_TRACE(v);
    std::ofstream(dir / "f.conf") << "# " << shell_comment_text("comment " + v) << "\nVAR=" << shell_quote(v) << "\n";
    const auto got =
        run_bash((dir / "read.sh").string(), "source " + (dir / "f.conf").string() + "; printf %s \"$VAR\"");
    EXPECT_EQ(got, v);
  }
  EXPECT_FALSE(fs::exists("/tmp/p2pnode-grammar-ran"));
}

// DKMS's safe_source (/usr/sbin/dkms) sources a file, then echoes each variable back inside "…" and
// sources that again. Taken from the installed dkms itself, it reads the dkms.conf and the
// framework.conf.d file p2pnode renders: every value comes back as written, nothing runs, and a
// value that would not survive the second read is what dkms::unsafe_value refuses.
TEST(ShellQuote, DkmsSafeSourceReadsRenderedFilesBackUnchanged) {
  ASSERT_TRUE(fs::exists("/usr/sbin/dkms")) << "dkms is missing (scripts/install-deps.sh test installs it)";
  const p2pnode::test::TempDir scratch("dkms-source");
  const fs::path dir = scratch.path();
  fs::remove("/tmp/p2pnode-grammar-ran");
  const std::string prelude =
      "mktemp_or_die() { mktemp; }\ndeprecated() { :; }\n"
      "eval \"$(sed -n '/^safe_source() {/,/^}/p' /usr/sbin/dkms)\"\n"
      "declare -F safe_source >/dev/null || { echo NO_SAFE_SOURCE; exit 1; }\n"
      "kernelver=6.1.0-99-amd64\n";
  dkms::Conf c = dkms::gdrdrv_conf("gdrdrv", "2.6", "/usr/src/nvidia-p2p-550.90.07/kernel-open/nvidia");
  c.patches = {"01-a.patch", "02-it's.patch"};
  c.patch_match = {"", "^(6\\.(1[0-9])|7\\.[0-9]+)([.-]|$)"};
  ASSERT_FALSE(dkms::unsafe_value(c));
  std::ofstream(dir / "dkms.conf") << dkms::render(c);
  const auto got = run_bash((dir / "read.sh").string(),
                            prelude + "safe_source " + (dir / "dkms.conf").string() +
                                " PACKAGE_NAME PACKAGE_VERSION MAKE PATCH PATCH_MATCH BUILT_MODULE_LOCATION\n"
                                "printf '%s|' \"$PACKAGE_NAME\" \"$PACKAGE_VERSION\" \"${MAKE[0]}\" \"${PATCH[1]}\" "
                                "\"${PATCH_MATCH[1]}\" \"${BUILT_MODULE_LOCATION[0]}\"\n");
  EXPECT_EQ(got,
            "gdrdrv|2.6|cd src/gdrdrv && 'make' KVER=6.1.0-99-amd64 NVIDIA_SRC_DIR='/usr/src/nvidia-p2p-550.90.07/"
            "kernel-open/nvidia' NVIDIA_IS_OPENSOURCE=y|02-it's.patch|^(6\\.(1[0-9])|7\\.[0-9]+)([.-]|$)|src/gdrdrv/|");

  ModuleSigning s{"/var/lib/dkms/mok.key", "/var/lib/dkms/mok.pub"};
  std::ofstream(dir / "sign.conf") << actions::signing_drop_in(s);
  EXPECT_EQ(
      run_bash((dir / "read.sh").string(), prelude + "safe_source " + (dir / "sign.conf").string() +
                                               " mok_signing_key mok_certificate\nprintf '%s|' \"$mok_signing_key\" "
                                               "\"$mok_certificate\"\n"),
      "/var/lib/dkms/mok.key|/var/lib/dkms/mok.pub|");

  // Hostile values: those unsafe_value lets through come back unchanged; the others it refuses.
  for (const auto& v : kHostile) {
    SCOPED_TRACE(v);
    dkms::Conf h = dkms::kbuild_conf("p2ptest", "1.0", {"p2ptest"}, {v});
    if (dkms::unsafe_value(h)) { continue; }
    std::ofstream(dir / "h.conf") << dkms::render(h);
    EXPECT_EQ(run_bash((dir / "read.sh").string(),
                       prelude + "safe_source " + (dir / "h.conf").string() + " PATCH\nprintf %s \"${PATCH[0]}\"\n"),
              v);
  }
  EXPECT_TRUE(
      dkms::unsafe_value(dkms::kbuild_conf("p2ptest", "1.0", {"p2ptest"}, {"$(touch /tmp/p2pnode-grammar-ran)"})));
  EXPECT_TRUE(dkms::unsafe_value(dkms::gdrdrv_conf("gdrdrv", "2.6", "/usr/src/a'b")));
  EXPECT_FALSE(fs::exists("/tmp/p2pnode-grammar-ran"));
}

}  // namespace
}  // namespace p2pnode::grammar
