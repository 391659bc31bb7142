// ConnectionGuard on a hand-driven clock: what it sheds at accept, what it cuts and when, what it
// counts and how it reports (summed, rate-limited).
#include "http/connection_guard.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace p2pnode::http {
namespace {
using namespace std::chrono_literals;
using Clock = ConnectionGuard::Clock;

struct Harness {
  std::vector<int> cut;
  std::vector<std::string> logs;
  ConnectionGuard guard;
  explicit Harness(ConnectionGuard::Limits l)
      : guard(
            l, [this](const std::string& m) { logs.push_back(m); }, [this](int fd) { cut.push_back(fd); }) {}
};

ConnectionGuard::Limits limits(std::size_t total, std::size_t per_client) {
  ConnectionGuard::Limits l;
  l.max_connections = total;
  l.max_per_client = per_client;
  l.request_timeout = 5s;
  l.max_connection_time = 60s;
  l.log_interval = 10s;
  return l;
}

TEST(ConnectionGuard, OneClientCannotTakeEverySlot) {
  Harness h(limits(8, 3));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(h.guard.admit("127.0.0.1"));
    h.guard.opened(10 + i, "127.0.0.1");
  }
  EXPECT_FALSE(h.guard.admit("127.0.0.1"));  // its fourth is shed
  EXPECT_TRUE(h.guard.admit("127.0.0.2"));   // another client still gets in
  const auto c = h.guard.shed_counts();
  EXPECT_EQ(c[static_cast<std::size_t>(ShedReason::per_client_limit)], 1u);
  EXPECT_NE(h.guard.metrics_text().find("p2pnode_http_connections_rejected_total{reason=\"per_client_limit\"} 1\n"),
            std::string::npos);
}

TEST(ConnectionGuard, TheTotalLimitHoldsAcrossClientsAndAClosedSlotIsFreeAgain) {
  Harness h(limits(2, 2));
  const auto a = h.guard.opened(10, "10.0.0.1");
  h.guard.opened(11, "10.0.0.2");
  EXPECT_FALSE(h.guard.admit("10.0.0.3"));
  EXPECT_EQ(h.guard.shed_counts()[static_cast<std::size_t>(ShedReason::connection_limit)], 1u);
  h.guard.closed(a);
  EXPECT_TRUE(h.guard.admit("10.0.0.3"));
  EXPECT_EQ(h.guard.open_connections(), 1u);
}

TEST(ConnectionGuard, ARequestMustArriveInTimeButIsNotCutWhileAnswered) {
  Harness h(limits(8, 8));
  const auto t0 = Clock::now();
  const auto idle = h.guard.opened(20, "127.0.0.1");    // sends nothing (or trickles)
  const auto served = h.guard.opened(21, "127.0.0.2");  // sends its request at once
  h.guard.request_complete(served);
  EXPECT_EQ(h.guard.sweep(t0 + 4s), 0);
  EXPECT_EQ(h.guard.sweep(t0 + 6s), 1);
  EXPECT_EQ(h.cut, std::vector<int>{20});
  EXPECT_EQ(h.guard.sweep(t0 + 7s), 0);  // cut once, counted once, until the server closes it
  h.guard.closed(idle);
  EXPECT_EQ(h.guard.shed_counts()[static_cast<std::size_t>(ShedReason::request_timeout)], 1u);
  // After its answer, a keep-alive connection gets a fresh deadline for the next request.
  h.guard.response_done(served);
  EXPECT_EQ(h.guard.sweep(Clock::now() + 4s), 0);
  EXPECT_EQ(h.guard.sweep(Clock::now() + 6s), 1);
}

TEST(ConnectionGuard, NoConnectionOutlivesMaxConnectionTime) {
  Harness h(limits(8, 8));
  const auto t0 = Clock::now();
  const auto id = h.guard.opened(30, "127.0.0.1");
  h.guard.request_complete(id);  // busy (a slow reader of a big answer): no request deadline
  EXPECT_EQ(h.guard.sweep(t0 + 59s), 0);
  EXPECT_EQ(h.guard.sweep(t0 + 61s), 1);
  EXPECT_EQ(h.guard.shed_counts()[static_cast<std::size_t>(ShedReason::max_connection_time)], 1u);
}

TEST(ConnectionGuard, ShedConnectionsAreLoggedSummedAtMostOncePerInterval) {
  Harness h(limits(4, 1));
  const auto t0 = Clock::now();
  h.guard.opened(40, "127.0.0.1");
  for (int i = 0; i < 1000; ++i) { h.guard.admit("127.0.0.1"); }
  h.guard.admit("192.0.2.7");  // admitted (its first)
  h.guard.sweep(t0);
  ASSERT_EQ(h.logs.size(), 1u);
  EXPECT_EQ(h.logs[0],
            "API: shed 1000 connection(s) since the last report (per_client_limit 1000); most from 127.0.0.1 1000");
  for (int i = 0; i < 500; ++i) { h.guard.admit("127.0.0.1"); }
  h.guard.sweep(t0 + 2s);
  EXPECT_EQ(h.logs.size(), 1u);  // within the interval: held back, not dropped
  h.guard.sweep(t0 + 11s);
  ASSERT_EQ(h.logs.size(), 2u);
  EXPECT_NE(h.logs[1].find("shed 501 connection(s)"), std::string::npos) << h.logs[1];  // 500 + the cut at 11 s
  EXPECT_NE(h.logs[1].find("request_timeout 1"), std::string::npos) << h.logs[1];
}

TEST(ConnectionGuard, TheSweeperThreadCutsAStalledConnection) {
  auto l = limits(8, 8);
  l.request_timeout = 300ms;
  l.sweep_interval = 50ms;
  std::atomic<int> cut{-1};
  ConnectionGuard guard(l, nullptr, [&cut](int fd) { cut = fd; });
  guard.start();
  const auto t0 = Clock::now();
  guard.opened(50, "127.0.0.1");
  while (cut.load() < 0 && Clock::now() < t0 + 5s) { std::this_thread::sleep_for(20ms); }
  const auto took = Clock::now() - t0;
  guard.stop();
  EXPECT_EQ(cut.load(), 50);
  EXPECT_GE(took, 300ms);
}

}  // namespace
}  // namespace p2pnode::http
