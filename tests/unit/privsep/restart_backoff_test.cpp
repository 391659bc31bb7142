// The wait before the HTTP process is started again: doubling from 100 ms to 30 s while it keeps
// dying, afresh after it served a minute, and never a point where the daemon gives up.
#include "privsep/restart_backoff.hpp"

#include <gtest/gtest.h>

namespace p2pnode::privsep {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kBriefly{50};

TEST(RestartBackoff, DoublesFrom100MsTo30s) {
  RestartBackoff b;
  const long expected[] = {100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
  for (long ms : expected) { EXPECT_EQ(b.after_exit(kBriefly), milliseconds(ms)); }
}

TEST(RestartBackoff, StartsAfreshAfterAMinuteOfService) {
  RestartBackoff b;
  for (int i = 0; i < 6; ++i) { b.after_exit(kBriefly); }
  EXPECT_EQ(b.after_exit(milliseconds(59999)), milliseconds(6400)) << "not yet steady";
  EXPECT_EQ(b.after_exit(RestartBackoff::kSteady), milliseconds(100));
  EXPECT_EQ(b.after_exit(kBriefly), milliseconds(200));
}

TEST(RestartBackoff, FailedStartsKeepTryingAtMostEvery30s) {
  RestartBackoff b;
  milliseconds wait{0};
  for (int i = 0; i < 1000; ++i) { wait = b.after_failed_start(); }
  EXPECT_EQ(wait, RestartBackoff::kMost) << "the thousandth failure still schedules a try";
  EXPECT_EQ(b.after_exit(RestartBackoff::kSteady), milliseconds(100)) << "a process that served resets it";
}

}  // namespace
}  // namespace p2pnode::privsep
