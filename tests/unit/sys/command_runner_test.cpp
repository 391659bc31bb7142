// ProcessRunner on real /bin/sh children, and the ScriptedRunner test double.
#include "sys/command_runner.hpp"
#include "unit/temp_dir.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace p2pnode::sys;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {
Command sh(const std::string& script, std::chrono::milliseconds timeout = 10s) {
  Command c;
  c.argv = {"/bin/sh", "-c", script};
  c.timeout = timeout;
  return c;
}

// True once the process is gone or a zombie (killed, not yet reaped by its new parent).
bool dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) { return true; }
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] == 'Z' || line[close + 2] == 'X';
}

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds limit = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) { return true; }
    std::this_thread::sleep_for(5ms);
  }
  return cond();
}
}  // namespace

TEST(ProcessRunner, ExitCodesAndOutput) {
  ProcessRunner r;
  const auto ok = r.run(sh("echo out; echo err >&2"));
  EXPECT_TRUE(ok.success());
  EXPECT_TRUE(ok.exited);
  EXPECT_EQ(ok.out, "out\n");
  EXPECT_EQ(ok.err, "err\n");
  EXPECT_EQ(ok.describe(), "exit 0");
  const auto three = r.run(sh("exit 3"));
  EXPECT_FALSE(three.success());
  EXPECT_TRUE(three.exited);
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_EQ(three.describe(), "exit 3");
  EXPECT_FALSE(three.timed_out);
}

TEST(ProcessRunner, KilledBySignal) {
  ProcessRunner r;
  const auto res = r.run(sh("kill -TERM $$; sleep 5"));
  EXPECT_FALSE(res.exited);
  EXPECT_EQ(res.signal, SIGTERM);
  EXPECT_EQ(res.describe(), "killed by signal 15");
}

TEST(ProcessRunner, MissingProgram) {
  ProcessRunner r;
  Command c;
  c.argv = {"/nonexistent/p2pnode-no-such-program", "--flag"};
  const auto res = r.run(c);
  EXPECT_TRUE(res.start_failed);
  EXPECT_FALSE(res.exited);
  EXPECT_FALSE(res.success());
  EXPECT_EQ(res.describe(), "could not start: /nonexistent/p2pnode-no-such-program: No such file or directory");
  Command empty;
  EXPECT_TRUE(r.run(empty).start_failed);
}

TEST(ProcessRunner, TimeoutKillsTheWholeGroupIncludingAGrandchild) {
  ProcessRunner r;
  const p2pnode::test::TempDir tmp("runner");
  const std::string pidfile = (tmp / "grandchild").string();
  const auto t0 = std::chrono::steady_clock::now();
  const auto res = r.run(sh("sleep 30 & echo $! > " + pidfile + "; sleep 30", 300ms));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(res.timed_out);
  EXPECT_FALSE(res.exited);
  EXPECT_FALSE(res.success());
  EXPECT_LT(took, 5s);
  EXPECT_EQ(res.describe().rfind("timed out after", 0), 0u) << res.describe();
  std::ifstream in(pidfile);
  pid_t grandchild = 0;
  in >> grandchild;
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(eventually([&] { return dead(grandchild); })) << "grandchild " << grandchild << " survived";
}

TEST(ProcessRunner, TimeoutHoldsWhenTheChildClosesItsOutput) {
  ProcessRunner r;
  const auto t0 = std::chrono::steady_clock::now();
  const auto res = r.run(sh("exec >/dev/null 2>&1; sleep 30", 300ms));
  EXPECT_TRUE(res.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(ProcessRunner, CancelKillsTheGroupWithinASecondBothWhileWritingAndAfterClosingOutput) {
  for (const char* script : {"sleep 30 & sleep 30", "exec >/dev/null 2>&1; sleep 30"}) {
    ProcessRunner r;
    std::atomic<bool> cancel{false};
    auto cmd = sh(script, 60s);
    cmd.cancel = &cancel;
    std::thread stopper([&] {
      std::this_thread::sleep_for(300ms);
      cancel = true;
    });
    const auto t0 = std::chrono::steady_clock::now();
    const auto res = r.run(cmd);
    stopper.join();
    EXPECT_TRUE(res.cancelled) << script;
    EXPECT_FALSE(res.timed_out) << script;
    EXPECT_FALSE(res.success()) << script;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s) << script;
    EXPECT_EQ(res.describe(), "cancelled (the daemon is stopping, or the pass ran past reconcile.time_limit)");
  }
}

TEST(ProcessRunner, OutputIsCappedAndMarked) {
  ProcessRunner r;
  Command c = sh("head -c 200000 /dev/zero | tr '\\0' x; echo done >&2");
  c.max_output_bytes = 1000;
  const auto res = r.run(c);
  EXPECT_TRUE(res.success());
  EXPECT_EQ(res.out.size(), 1000u);
  EXPECT_TRUE(res.out_truncated);
  EXPECT_EQ(res.err, "done\n");
}

TEST(ProcessRunner, OnLineStreamsEachLineAsItArrives) {
  ProcessRunner r;
  std::vector<std::pair<std::string, bool>> lines;
  Command c = sh("echo one; echo two >&2; printf 'three\\nfour'");
  c.on_line = [&](std::string_view line, bool is_stderr) { lines.emplace_back(std::string(line), is_stderr); };
  const auto res = r.run(c);
  EXPECT_TRUE(res.success());
  std::vector<std::string> out_lines, err_lines;
  for (const auto& [l, e] : lines) { (e ? err_lines : out_lines).push_back(l); }
  EXPECT_EQ(out_lines, (std::vector<std::string>{"one", "three", "four"}));  // the last, unterminated, too
  EXPECT_EQ(err_lines, (std::vector<std::string>{"two"}));
  EXPECT_EQ(res.out, "one\nthree\nfour");
}

TEST(ProcessRunner, CarriageReturnEndsALineOnlyWhenAsked) {
  for (const bool cr : {false, true}) {
    ProcessRunner r;
    std::vector<std::string> lines;
    Command c = sh("printf '\\r##  10.0%%\\r####  50.0%%\\r######## 100.0%%\\ndone\\n' >&2");
    c.cr_ends_line = cr;
    c.on_line = [&](std::string_view line, bool) { lines.emplace_back(line); };
    ASSERT_TRUE(r.run(c).success());
    if (cr) {
      EXPECT_EQ(lines, (std::vector<std::string>{"##  10.0%", "####  50.0%", "######## 100.0%", "done"}));
    } else {
      ASSERT_EQ(lines.size(), 2u);
      EXPECT_EQ(lines[1], "done");
    }
  }
}

TEST(ProcessRunner, EnvironmentWorkingDirectoryAndStdin) {
  ProcessRunner r;
  Command c = sh("echo \"$P2PNODE_TEST_VAR\"; pwd; cat; echo eof");
  c.env["P2PNODE_TEST_VAR"] = "hello world";
  c.cwd = "/tmp";
  const auto res = r.run(c);
  EXPECT_TRUE(res.success());
  EXPECT_EQ(res.out, "hello world\n/tmp\neof\n");  // stdin is /dev/null: cat ends at once
}

TEST(ProcessRunner, UnsetEnvTakesNamesOutOfTheInheritedEnvironment) {
  ::setenv("P2PNODE_TEST_OUTER", "level 1", 1);
  ::setenv("P2PNODE_TEST_KEPT", "kept", 1);
  ProcessRunner r;
  Command c = sh("echo \"${P2PNODE_TEST_OUTER-unset} ${P2PNODE_TEST_KEPT-unset}\"");
  c.unset_env = {"P2PNODE_TEST_OUTER", "P2PNODE_TEST"};  // a prefix of a name takes nothing out
  const auto res = r.run(c);
  ::unsetenv("P2PNODE_TEST_OUTER");
  ::unsetenv("P2PNODE_TEST_KEPT");
  EXPECT_EQ(res.out, "unset kept\n");
}

TEST(ProcessRunner, Display) {
  Command c;
  c.argv = {"update-grub", "--output", "a b"};
  EXPECT_EQ(c.display(), "update-grub --output 'a b'");
}

TEST(ScriptedRunner, AnswersByPrefixLastRuleWinsAndRecordsCalls) {
  ScriptedRunner s;
  s.on({"dkms"}, exited_with(1, "", "generic failure"));
  s.on({"dkms", "status"}, exited_with(0, "nvidia-p2p/550.90.07: installed\n"));
  s.on({"modprobe"}, [](const Command& c) { return exited_with(c.argv.size() > 1 && c.argv[1] == "-r" ? 1 : 0); });
  Command status;
  status.argv = {"dkms", "status"};
  EXPECT_EQ(s.run(status).out, "nvidia-p2p/550.90.07: installed\n");
  Command build;
  build.argv = {"dkms", "build", "nvidia-p2p/550.90.07"};
  EXPECT_EQ(s.run(build).exit_code, 1);
  Command rm;
  rm.argv = {"modprobe", "-r", "nvidia"};
  EXPECT_EQ(s.run(rm).exit_code, 1);
  Command unknown;
  unknown.argv = {"update-grub"};
  const auto u = s.run(unknown);
  EXPECT_TRUE(u.start_failed);
  EXPECT_EQ(u.err, "no scripted answer for: update-grub");
  EXPECT_EQ(s.calls().size(), 4u);
  EXPECT_EQ(s.count("dkms"), 2u);
  EXPECT_EQ(s.count("update-grub"), 1u);
  EXPECT_EQ(s.count("nvidia-smi"), 0u);
  EXPECT_EQ(s.calls()[1], (std::vector<std::string>{"dkms", "build", "nvidia-p2p/550.90.07"}));
}

TEST(CommandResult, Describe) {
  CommandResult t;
  t.timed_out = true;
  t.elapsed = 30000ms;
  EXPECT_EQ(t.describe(), "timed out after 30.0 s");
  EXPECT_EQ(exited_with(10).describe(), "exit 10");
}

// The reconcile pass's commands get its cancel flag through CancellingRunner, unless a command
// brings its own (the self-test agent's).
TEST(CancellingRunner, GivesEachCommandThePassFlagUnlessItHasOne) {
  p2pnode::sys::ScriptedRunner inner;
  std::vector<const std::atomic<bool>*> seen;
  inner.on({"dkms"}, [&](const p2pnode::sys::Command& c) {
    seen.push_back(c.cancel);
    return p2pnode::sys::exited_with(0, "");
  });
  std::atomic<bool> pass{false}, own{false};
  p2pnode::sys::CancellingRunner r(inner, &pass);
  p2pnode::sys::Command c;
  c.argv = {"dkms", "status"};
  (void)r.run(c);
  c.cancel = &own;
  (void)r.run(c);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], &pass);
  EXPECT_EQ(seen[1], &own);
}
