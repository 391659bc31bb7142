// dkms.conf generation, golden-tested (P2PNODE_TEST_ACCEPT=1 rewrites tests/golden/dkms/*.conf).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "dkms/conf.hpp"
#include "nvidia/breakage.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::dkms {
namespace {

void expect_golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(P2PNODE_SOURCE_DIR) + "/tests/golden/dkms/" + name;
  if (std::getenv("P2PNODE_TEST_ACCEPT")) {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path << " (run with P2PNODE_TEST_ACCEPT=1)";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), text) << "golden " << path;
}

TEST(DkmsConf, NvidiaOpenTreeGolden) {
  const auto mods = nvidia_modules({"Kbuild", "Makefile", "common", "conftest.sh", "nvidia", "nvidia-drm",
                                    "nvidia-modeset", "nvidia-peermem", "nvidia-uvm"});
  ASSERT_EQ(mods, (std::vector<std::string>{"nvidia", "nvidia-uvm", "nvidia-modeset", "nvidia-drm", "nvidia-peermem"}));
  const auto conf =
      nvidia_open_conf("nvidia-p2p", "550.90.07", mods, {"01-pci_resize_resource-6.1.patch", "02-follow_pfn.patch"});
  const std::string text = render(conf);
  expect_golden("nvidia-p2p-550.90.07.conf", text);
  // The MAKE line starts with a quoted 'make', so DKMS's ${make_command/#make/…} does not match.
  EXPECT_NE(text.find("MAKE[0]=''\\''make'\\'' "), std::string::npos) << text;
  const auto make_line =
      text.substr(text.find("MAKE[0]="), text.find('\n', text.find("MAKE[0]=")) - text.find("MAKE[0]="));
  EXPECT_EQ(make_line.find("KERNELRELEASE"), std::string::npos) << make_line;
  EXPECT_NE(make_line.find("KERNEL_UNAME=${kernelver}"), std::string::npos) << make_line;
  EXPECT_NE(text.find("PATCH[1]='02-follow_pfn.patch'"), std::string::npos);
  EXPECT_NE(text.find("BUILT_MODULE_LOCATION[4]='kernel-open/'"), std::string::npos);
  // With the core prebuilt (kernel-open/*/*.o_binary in the source), a kernel's build is kernel-open/ only.
  const std::string pre = render(nvidia_open_conf("nvidia-p2p", "550.90.07", mods, {}, true));
  EXPECT_NE(pre.find("MAKE[0]=''\\''make'\\'' -j$(nproc) -C kernel-open modules KERNEL_UNAME=${kernelver}'\n"),
            std::string::npos)
      << pre;
  EXPECT_NE(pre.find("BUILT_MODULE_LOCATION[0]='kernel-open/'"), std::string::npos);
}

// Builtin patches: PATCH_MATCH only where the breakage table gives a kernel range, and the regex
// means in DKMS's bash (`[[ $kernelver =~ ${PATCH_MATCH[i]} ]]`, after sourcing dkms.conf) what
// kernel_in_range() means.
TEST(DkmsConf, PatchMatchAsDkmsSeesIt) {
  const auto* io = nvidia::find_breakage(nvidia::builtin_breakages(), "io-memory-pfn");
  ASSERT_NE(io, nullptr);
  auto conf = nvidia_open_conf("nvidia-p2p", "565.57.01", {"nvidia"},
                               {"01-pci-resize-resource-exclude-bars.patch", "02-io-memory-pfn.patch"});
  conf.patch_match = {"", nvidia::dkms_patch_match(*io)};
  const std::string text = render(conf);
  expect_golden("nvidia-p2p-565.57.01-builtin.conf", text);
  EXPECT_EQ(text.find("PATCH_MATCH[0]"), std::string::npos);
  const p2pnode::test::TempDir scratch("conf");
  const std::string conf_file = (scratch / "dkms.conf").string();
  std::ofstream(conf_file) << text;
  const std::vector<std::string> kernels = {"6.1.0-56-amd64",      "6.9.12-amd64",      "6.10.0-rc1",
                                            "6.12.48+deb13-amd64", "6.17.0-14-generic", "7.1.0"};
  std::string script = "source " + conf_file + "; for k in";
  for (const auto& k : kernels) { script += " " + k; }
  script += "; do if [[ $k =~ ${PATCH_MATCH[1]} ]]; then echo \"$k 1\"; else echo \"$k 0\"; fi; done";
  FILE* p = ::popen(("bash -c '" + script + "'").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p)) { out += buf; }
  EXPECT_EQ(::pclose(p), 0);
  std::string want;
  for (const auto& k : kernels) { want += k + (nvidia::kernel_in_range(*io, k) ? " 1\n" : " 0\n"); }
  EXPECT_EQ(out, want);
  EXPECT_NE(want.find("6.12.48+deb13-amd64 1"), std::string::npos);
  EXPECT_NE(want.find("6.1.0-56-amd64 0"), std::string::npos);
}

TEST(DkmsConf, KbuildTreeGolden) {
  const auto mods = kbuild_modules("# test\nobj-m += p2ptest.o\nobj-m += other.o # second\n");
  ASSERT_EQ(mods, (std::vector<std::string>{"p2ptest", "other"}));
  expect_golden("p2ptest-1.0.conf", render(kbuild_conf("p2ptest", "1.0", mods, {"01-mark.patch"})));
}

TEST(DkmsConf, ClassifiesTrees) {
  EXPECT_EQ(classify_tree({"COPYING", "Makefile", "kernel-open", "src", "version.mk"}), TreeKind::nvidia_open);
  EXPECT_EQ(classify_tree({"Makefile", "p2ptest.c"}), TreeKind::kbuild);
  EXPECT_EQ(classify_tree({"kernel-open"}), TreeKind::kbuild);  // kernel-open alone is a kernel-source package
}

TEST(DkmsConf, TreeVersion) {
  EXPECT_EQ(nvidia_tree_version("NVIDIA_VERSION = 550.90.07\n"), "550.90.07");
  EXPECT_EQ(nvidia_tree_version("# x\nNVIDIA_NVID_VERSION = 550.90.07\nNVIDIA_VERSION ?= 565.57.01\n"), "565.57.01");
  EXPECT_EQ(nvidia_tree_version("nothing\n"), std::nullopt);
}

TEST(DkmsConf, NoAutoinstallSoAFailedBuildNeverFailsAKernelInstall) {
  const auto text = render(kbuild_conf("p2ptest", "1.0", {"p2ptest"}, {}));
  EXPECT_EQ(text.find("AUTOINSTALL"), std::string::npos);
  EXPECT_EQ(without_autoinstall(text), std::nullopt);
  // What an earlier p2pnode staged: the line goes, everything else stays as it was.
  const std::string old = "PACKAGE_NAME=\"nvidia\"\nAUTOINSTALL=\"yes\"\nPATCH[0]=\"a.patch\"";
  EXPECT_EQ(without_autoinstall(old), std::optional<std::string>("PACKAGE_NAME=\"nvidia\"\nPATCH[0]=\"a.patch\""));
}

// Every value in single quotes (grammar::shell_quote); what DKMS would read a second time as shell
// is refused before anything is written (core/grammar_test.cpp reads the files back with bash).
TEST(DkmsConf, QuotesValuesAndRefusesWhatDkmsWouldReadAsShell) {
  Conf c = kbuild_conf("we'ird", "1.0", {"m"}, {});
  EXPECT_NE(render(c).find("PACKAGE_NAME='we'\\''ird'"), std::string::npos) << render(c);
  EXPECT_FALSE(unsafe_value(c));
  EXPECT_TRUE(unsafe_value(kbuild_conf("we\"ird", "1.0", {"m"}, {})));
  EXPECT_TRUE(unsafe_value(kbuild_conf("p", "1.0", {"m"}, {"$(id).patch"})));
  EXPECT_TRUE(unsafe_value(kbuild_conf("p", "1.0", {"m"}, {"a\nb.patch"})));
  EXPECT_TRUE(unsafe_value(gdrdrv_conf("gdrdrv", "2.6", "/usr/src/x`id`")));
}

}  // namespace
}  // namespace p2pnode::dkms
