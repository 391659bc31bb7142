// `p2pnode serve|status` hand over to p2pnode-serve: where it is looked for, and what an operator
// sees when it is not there (the real p2pnode binary, copied alone into a scratch directory).
#include "cli/delegate.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "sys/command_runner.hpp"
#include "unit/temp_dir.hpp"

namespace fs = std::filesystem;
using p2pnode::cli::serve_binary_candidates;

TEST(Delegate, LooksBesideTheBinaryThenInLibexec) {
  const auto c = serve_binary_candidates("/usr/local/bin/p2pnode");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], fs::path("/usr/local/bin/p2pnode-serve"));
  EXPECT_EQ(c[1], fs::path("/usr/local/libexec/p2pnode/p2pnode-serve"));
}

TEST(Delegate, MissingDaemonProgramIsAClearUsageError) {
  const p2pnode::test::TempDir scratch("delegate");
  const fs::path dir = scratch.path();
  fs::create_directories(dir / "bin");
  fs::copy_file(P2PNODE_BINARY, dir / "bin" / "p2pnode", fs::copy_options::overwrite_existing);
  p2pnode::sys::ProcessRunner runner;
  p2pnode::sys::Command cmd;
  cmd.argv = {(dir / "bin" / "p2pnode").string(), "status", "--url", "http://127.0.0.1:1"};
  const auto res = runner.run(cmd);
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_NE(res.err.find("p2pnode-serve is not installed"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find((dir / "bin" / "p2pnode-serve").string()), std::string::npos) << res.err;
  EXPECT_NE(res.err.find((dir / "libexec" / "p2pnode" / "p2pnode-serve").string()), std::string::npos) << res.err;
}

TEST(Delegate, ServeHelpComesFromTheDaemonProgram) {
  p2pnode::sys::ProcessRunner runner;
  p2pnode::sys::Command cmd;
  cmd.argv = {P2PNODE_BINARY, "serve", "--help"};
  const auto res = runner.run(cmd);
  EXPECT_EQ(res.exit_code, 0) << res.err;
  EXPECT_NE(res.out.find("--config"), std::string::npos) << res.out;
}
