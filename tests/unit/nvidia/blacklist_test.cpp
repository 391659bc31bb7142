// modprobe.d blacklists of the NVIDIA modules: found, and commented out without touching anything else.
#include "nvidia/blacklist.hpp"

#include <gtest/gtest.h>

using namespace p2pnode::nvidia;

namespace {
// What a box carries after the stock driver was removed by hand, plus the nouveau lines the
// .run installer writes (which must stay).
constexpr const char* kFile =
    "# nvidia-installer-disable-nouveau.conf\n"
    "blacklist nouveau\n"
    "options nouveau modeset=0\n"
    "blacklist nvidia\n"
    "blacklist nvidia-drm   # keep the console\n"
    "install nvidia_uvm /bin/false\n"
    "install nvidia /sbin/modprobe --ignore-install nvidia\n"
    "# blacklist nvidia_modeset\n"
    "alias nvidia off\n"
    "blacklist nvidiafb\n";
}  // namespace

TEST(Blacklist, FindsBlacklistAndFalseInstallLinesOnly) {
  const auto found = find_nvidia_blacklists(kFile);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].line, 4);
  EXPECT_EQ(found[0].text, "blacklist nvidia");
  EXPECT_EQ(found[1].line, 5);
  EXPECT_EQ(found[2].text, "install nvidia_uvm /bin/false");
}

TEST(Blacklist, DisablesOnlyThoseLinesAndKeepsEveryOtherByte) {
  const std::string out = disable_nvidia_blacklists(kFile);
  EXPECT_TRUE(find_nvidia_blacklists(out).empty());
  EXPECT_NE(out.find("\nblacklist nouveau\n"), std::string::npos);
  EXPECT_NE(out.find("\nblacklist nvidiafb\n"), std::string::npos);  // the fbdev driver, not ours
  EXPECT_NE(out.find("\n# disabled by p2pnode (driver.conflicts: remove): blacklist nvidia\n"), std::string::npos);
  EXPECT_NE(out.find("\n# disabled by p2pnode (driver.conflicts: remove): install nvidia_uvm /bin/false\n"),
            std::string::npos);
  EXPECT_NE(out.find("\ninstall nvidia /sbin/modprobe --ignore-install nvidia\n"), std::string::npos);
  EXPECT_EQ(disable_nvidia_blacklists(out), out);  // a second pass changes nothing
}

TEST(Blacklist, NoTrailingNewlineAndEmptyInput) {
  EXPECT_EQ(disable_nvidia_blacklists("blacklist nvidia_peermem"),
            "# disabled by p2pnode (driver.conflicts: remove): blacklist nvidia_peermem");
  EXPECT_EQ(disable_nvidia_blacklists(""), "");
  EXPECT_TRUE(find_nvidia_blacklists("").empty());
}

TEST(Blacklist, ModuleNamesWithDashOrUnderscore) {
  for (const char* n : {"nvidia", "nvidia-uvm", "nvidia_uvm", "nvidia-modeset", "nvidia_drm", "nvidia-peermem"}) {
    EXPECT_TRUE(is_nvidia_module_name(n)) << n;
  }
  for (const char* n : {"nouveau", "nvidiafb", "nvidia-smi", "nvidia_fs", ""}) {
    EXPECT_FALSE(is_nvidia_module_name(n)) << n;
  }
}
