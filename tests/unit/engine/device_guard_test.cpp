// The guard against reconciles that only chase the kernel's echo of p2pnode's own changes.
#include "engine/device_guard.hpp"

#include <gtest/gtest.h>

using p2pnode::engine::DeviceLoopGuard;

TEST(DeviceLoopGuard, AnEchoThatFindsNothingToDoNeverTrips) {
  DeviceLoopGuard g;
  for (int i = 0; i < 10; ++i) {
    g.after_pass("device", false);  // bind/unbind echo: the next pass changes nothing
    EXPECT_TRUE(g.allows("device"));
  }
}

TEST(DeviceLoopGuard, ThreeDevicePassesInARowThatChangedTheBoxStopDeviceTriggersOnly) {
  DeviceLoopGuard g;
  g.after_pass("start", true);
  g.after_pass("device", true);
  g.after_pass("device", true);
  EXPECT_TRUE(g.allows("device"));
  g.after_pass("device", true);
  EXPECT_EQ(g.streak(), 3);
  EXPECT_FALSE(g.allows("device"));
  for (const char* t : {"start", "reload", "api", "schedule", "selftest"}) { EXPECT_TRUE(g.allows(t)) << t; }
  g.after_pass("api", true);  // an operator's reconcile resets it
  EXPECT_TRUE(g.allows("device"));
}

TEST(DeviceLoopGuard, APassThatChangedNothingBreaksTheStreak) {
  DeviceLoopGuard g;
  g.after_pass("device", true);
  g.after_pass("device", true);
  g.after_pass("device", false);
  g.after_pass("device", true);
  g.after_pass("device", true);
  EXPECT_TRUE(g.allows("device"));
}
