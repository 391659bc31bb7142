// Archives unpack without the archive's owners or set-id bits (lifecycle/dkms_run.hpp).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "lifecycle/dkms_run.hpp"
#include "sys/command_runner.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::lifecycle {
namespace {
namespace fs = std::filesystem;

TEST(Unpack, TarRunsWithoutOwnersAndPermissions) {
  const auto argv = unpack_argv("/a.tar.xz", "/d");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--no-same-owner"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--no-same-permissions"), argv.end());
  EXPECT_EQ(argv.back(), "/d");
}

// A tarball whose file is setuid root: unpacked as apply unpacks it, no file keeps a set-id bit.
TEST(Unpack, ATarballWithASetuidFileIsNeutralised) {
  const p2pnode::test::TempDir scratch("unpack");
  const fs::path dir = scratch.path();
  fs::create_directories(dir / "out");
  // The archive's member says mode 4755 and owner root: python's tarfile writes it as given.
  const std::string make =
      "/usr/bin/python3 -c \"import tarfile, io\n"
      "t = tarfile.open('" +
      (dir / "evil.tar").string() +
      "', 'w')\n"
      "for name, mode in (('top/sh', 0o4755), ('top/g', 0o2755)):\n"
      "    i = tarfile.TarInfo(name); i.mode = mode; i.uid = 0; i.uname = 'root'; d = b'#!/bin/sh\\\\n'\n"
      "    i.size = len(d); t.addfile(i, io.BytesIO(d))\n"
      "t.close()\"";
  ASSERT_EQ(std::system(make.c_str()), 0);
  sys::ProcessRunner runner;
  sys::Command c;
  c.argv = unpack_argv((dir / "evil.tar").string(), (dir / "out").string());
  c.timeout = std::chrono::seconds(30);
  const auto r = runner.run(c);
  ASSERT_TRUE(r.success()) << r.err;
  // As a user tar may keep the bit on a file the user owns (as root --no-same-permissions drops it);
  // either way strip_setid clears what is left.
  fs::permissions(dir / "out/top/sh", fs::perms::set_uid, fs::perm_options::add);
  ASSERT_TRUE(sys::SysRoot(dir).strip_setid("/out"));
  for (const char* f : {"out/top/sh", "out/top/g"}) {
    struct stat st {};
    ASSERT_EQ(::lstat((dir / f).c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u) << f;
  }
}

}  // namespace
}  // namespace p2pnode::lifecycle
