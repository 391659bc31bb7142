// probe/gpu_activity: the scheduler's answer from its command's exit status or its busy file, and
// the agent asked with --processes, through the two seams (a scripted runner, a recorded root).
#include "probe/gpu_activity.hpp"
#include "unit/temp_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace p2pnode;

namespace {
struct ActivityRoot {
  p2pnode::test::TempDir tmp{"activity"};
  fs::path dir = tmp.path();
  ActivityRoot() {
    fs::create_directories(dir / "run");
    fs::create_directories(dir / "proc");
  }
};
SchedulerSpec command(std::vector<std::string> argv) {
  SchedulerSpec s;
  s.command = std::move(argv);
  return s;
}
}  // namespace

TEST(Scheduler, ExitZeroIsIdleOneIsBusyElseUnknown) {
  ActivityRoot r;
  const sys::SysRoot root(r.dir.string());
  sys::ScriptedRunner runner;
  runner.on({"/usr/local/bin/idle"}, sys::exited_with(0, "idle\n"));
  runner.on({"/usr/local/bin/busy"}, sys::exited_with(1, "allocated to job 812\nmore\n"));
  runner.on({"/usr/local/bin/odd"}, sys::exited_with(3, "", "sinfo: error: cannot reach slurmctld\n"));
  auto v = probe::probe_scheduler(root, runner, command({"/usr/local/bin/idle"}));
  EXPECT_TRUE(v.known);
  EXPECT_FALSE(v.busy);
  v = probe::probe_scheduler(root, runner, command({"/usr/local/bin/busy", "--node", "n1"}));
  EXPECT_TRUE(v.busy);
  EXPECT_EQ(v.reason, "/usr/local/bin/busy --node n1 exited 1: allocated to job 812");
  v = probe::probe_scheduler(root, runner, command({"/usr/local/bin/odd"}));
  EXPECT_FALSE(v.known);
  EXPECT_NE(v.reason.find("exit 3: sinfo: error: cannot reach slurmctld (expected exit 0 idle or 1 busy)"),
            std::string::npos)
      << v.reason;
}

// Only the busy file's presence counts: its text never reaches the reason the API serves without a
// token (a busy_file pointed at the token file made the token public), and a FIFO there never blocks.
TEST(Scheduler, ABusyFileWinsByItsPresenceAlone) {
  ActivityRoot r;
  std::ofstream(r.dir / "run/p2pnode-busy") << "s3cr3t-token-text\nsecond line\n";
  const sys::SysRoot root(r.dir.string());
  sys::ScriptedRunner runner;
  SchedulerSpec s = command({"/usr/local/bin/idle"});
  s.busy_file = "/run/p2pnode-busy";
  auto v = probe::probe_scheduler(root, runner, s);
  EXPECT_TRUE(v.busy);
  EXPECT_EQ(v.reason, "/run/p2pnode-busy exists");
  EXPECT_TRUE(runner.calls().empty());  // the file answered: the command is not asked
  fs::remove(r.dir / "run/p2pnode-busy");
  ASSERT_EQ(::mkfifo((r.dir / "run/p2pnode-busy").c_str(), 0600), 0);
  v = probe::probe_scheduler(root, runner, s);  // returns at once: nothing opens the FIFO
  EXPECT_TRUE(v.busy);
  EXPECT_EQ(v.reason, "/run/p2pnode-busy exists");
}

TEST(GpuActivity, AsksTheAgentAndReadsTheDeviceFilesHolders) {
  ActivityRoot r;
  fs::create_directories(r.dir / "proc/777/fd");
  std::ofstream(r.dir / "proc/777/comm") << "trainer\n";
  fs::create_symlink("/dev/nvidia0", r.dir / "proc/777/fd/5");
  fs::create_symlink("/dev/nvidiactl", r.dir / "proc/777/fd/6");
  const sys::SysRoot root(r.dir.string());
  sys::ScriptedRunner agent, host;
  agent.on({"/opt/agent", "--processes"}, sys::exited_with(0, "{}"));
  const auto seen = probe::probe_gpu_activity(root, agent, host, "/opt/agent", std::nullopt);
  ASSERT_EQ(agent.calls().size(), 1u);
  EXPECT_EQ(seen.agent.out, "{}");
  ASSERT_EQ(seen.device_holders.size(), 1u);
  EXPECT_EQ(seen.device_holders[0].pid, 777);
  EXPECT_EQ(seen.device_holders[0].name, "trainer");
  EXPECT_EQ(seen.device_holders[0].seen, "/dev/nvidia0 /dev/nvidiactl");
  EXPECT_FALSE(seen.scheduler);
  EXPECT_TRUE(host.calls().empty());
}
