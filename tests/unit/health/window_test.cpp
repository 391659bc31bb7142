// Rise detection in a sliding window: a first sample proves nothing, a rise shows for one window,
// a reset starts over, stale counters are forgotten.
#include "health/window.hpp"

#include <gtest/gtest.h>

using namespace p2pnode::health;

TEST(CounterWindow, FirstSampleIsNoRise) {
  CounterWindow w(60);
  w.record("a", 0, 5);
  EXPECT_EQ(w.rise("a"), 0u);
  EXPECT_EQ(*w.latest("a"), 5u);
  EXPECT_EQ(w.rise("missing"), 0u);
  EXPECT_EQ(w.latest("missing"), nullptr);
}

TEST(CounterWindow, RiseShowsForOneWindowThenClears) {
  CounterWindow w(60);
  w.record("a", 0, 5);
  w.record("a", 10, 5);
  EXPECT_EQ(w.rise("a"), 0u);
  w.record("a", 20, 7);
  EXPECT_EQ(w.rise("a"), 2u);
  w.record("a", 60, 7);
  EXPECT_EQ(w.rise("a"), 2u);  // baseline still the sample at t=0 (the window's start)
  w.record("a", 75, 7);
  EXPECT_EQ(w.rise("a"), 2u);  // baseline t=10 (value 5): 10 <= 75-60
  w.record("a", 80, 7);
  EXPECT_EQ(w.rise("a"), 0u);  // baseline t=20 (value 7): the rise left the window
  w.record("a", 85, 9);
  EXPECT_EQ(w.rise("a"), 2u);
}

TEST(CounterWindow, ResetStartsOver) {
  CounterWindow w(600);
  w.record("a", 0, 100);
  w.record("a", 10, 120);
  EXPECT_EQ(w.rise("a"), 20u);
  w.record("a", 20, 3);  // the machine rebooted, the device was reset
  EXPECT_EQ(w.rise("a"), 0u);
  w.record("a", 30, 4);
  EXPECT_EQ(w.rise("a"), 1u);
}

TEST(CounterWindow, StaleCountersAreForgotten) {
  CounterWindow w(60);
  w.record("gone", 0, 1);
  w.record("here", 0, 1);
  w.record("here", 100, 1);
  w.forget_stale(100);
  EXPECT_EQ(w.latest("gone"), nullptr);
  EXPECT_NE(w.latest("here"), nullptr);
  EXPECT_EQ(w.size(), 1u);
}

TEST(CounterWindow, ShorterWindowAppliesFromTheNextRecord) {
  CounterWindow w(600);
  for (int t = 0; t <= 100; t += 10) { w.record("a", t, t == 0 ? 0 : 1); }
  EXPECT_EQ(w.rise("a"), 1u);
  w.set_window(30);
  w.record("a", 110, 1);
  EXPECT_EQ(w.rise("a"), 0u);
}
