// The daemon's side of the HTTP process's restarts, with a real fork: given descriptor -1 for its
// listening socket, each child ends before its exec (status 126), so it is a process that dies at
// once, every time, and never runs this test program again.
#include "privsep/http_supervisor.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <mutex>
#include <thread>
#include <vector>

namespace p2pnode::privsep {
namespace {

struct LogLines {
  std::mutex mu;
  std::vector<std::string> lines;
  engine::LogFn fn() {
    return [this](const engine::LogEvent& e) {
      std::lock_guard lk(mu);
      lines.push_back(e.message);
    };
  }
  bool has(const std::string& part) {
    std::lock_guard lk(mu);
    for (const auto& l : lines) {
      if (l.find(part) != std::string::npos) { return true; }
    }
    return false;
  }
};

// Drives the supervisor as the daemon's main loop does until `done`, or 10 s.
template <typename Done>
bool tend_until(HttpSupervisor& s, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) { return false; }
    s.tend();
    std::this_thread::sleep_for(
        std::min(s.next_due().value_or(std::chrono::milliseconds(10)), std::chrono::milliseconds(10)));
  }
  return true;
}

TEST(HttpSupervisor, StartsTheProcessAgainEachTimeItDiesWaitingLongerEachTime) {
  LogLines log;
  HttpSupervisor s(-1, HttpSettings{}, std::nullopt, false, log.fn());
  ASSERT_TRUE(s.start().ok());
  EXPECT_EQ(s.restarts(), 0u);
  ASSERT_TRUE(tend_until(s, [&] { return s.restarts() == 3 && log.has("starting another in 0.8 s"); }));
  EXPECT_TRUE(log.has("exited with status 126 after "));
  for (const char* wait : {"0.1 s", "0.2 s", "0.4 s", "0.8 s"}) {
    EXPECT_TRUE(log.has(std::string("starting another in ") + wait)) << wait;
  }
  EXPECT_NE(s.metrics_text().find("p2pnode_http_child_restarts_total 3\n"), std::string::npos);
  EXPECT_NE(s.metrics_text().find("# TYPE p2pnode_http_child_restarts_total counter\n"), std::string::npos);
  s.stop();
  EXPECT_FALSE(s.next_due()) << "stopped: nothing more is started";
}

// No descriptor left for the socketpair (what a failed fork looks like to it too): the start fails,
// is logged and tried again later; once descriptors are back, a process starts.
TEST(HttpSupervisor, AStartThatFailsIsTriedAgain) {
  LogLines log;
  HttpSupervisor s(-1, HttpSettings{}, std::nullopt, false, log.fn());
  ASSERT_TRUE(s.start().ok());
  ASSERT_TRUE(tend_until(s, [&] { return s.next_due().has_value(); })) << "the first one died and the next is due";
  rlimit before{};
  ::getrlimit(RLIMIT_NOFILE, &before);
  const int lowest_free = ::open("/dev/null", O_RDONLY);  // the kernel hands out the lowest free one
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  rlimit none = before;
  none.rlim_cur = static_cast<rlim_t>(lowest_free);
  ::setrlimit(RLIMIT_NOFILE, &none);
  const bool failed = tend_until(s, [&] { return log.has("cannot start the HTTP process: socketpair"); });
  ::setrlimit(RLIMIT_NOFILE, &before);
  ASSERT_TRUE(failed);
  EXPECT_TRUE(log.has("trying again in 0.2 s (the daemon goes on reconciling)"));
  EXPECT_EQ(s.restarts(), 0u);
  EXPECT_TRUE(tend_until(s, [&] { return s.restarts() == 1; })) << "started once descriptors are back";
}

TEST(HttpSupervisor, SettingsWithoutACertificateKeepTheLastOne) {
  LogLines log;
  HttpSettings first;
  first.tls_chain = "CHAIN";
  first.tls_key = "KEY";
  HttpSupervisor s(-1, first, std::nullopt, false, log.fn());
  HttpSettings reload;  // the limits of a reload that brings no new certificate
  reload.max_body = 1234;
  EXPECT_TRUE(s.send_settings(reload).ok()) << "no process runs: kept for the next";
  ASSERT_TRUE(s.start().ok());  // the child dies before reading them; what matters is what was kept
  EXPECT_EQ(s.next_settings().max_body, 1234u);
  EXPECT_EQ(s.next_settings().tls_chain, "CHAIN");
  EXPECT_EQ(s.next_settings().tls_key, "KEY");
}

}  // namespace
}  // namespace p2pnode::privsep
