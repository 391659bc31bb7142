#include "p2pnode/agent/stats.hpp"

#include <gtest/gtest.h>

using p2pnode::agent::median;
using p2pnode::agent::percentile;
using p2pnode::agent::summarize;

TEST(AgentStats, MedianOddEvenAndEmpty) {
  EXPECT_DOUBLE_EQ(*median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(*median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(*median({7.0}), 7.0);
  EXPECT_FALSE(median({}).has_value());
}

TEST(AgentStats, PercentileInterpolatesAndRejectsBadQ) {
  const std::vector<double> v{10.0, 20.0, 30.0, 40.0, 50.0};
  EXPECT_DOUBLE_EQ(*percentile(v, 0.0), 10.0);
  EXPECT_DOUBLE_EQ(*percentile(v, 1.0), 50.0);
  EXPECT_DOUBLE_EQ(*percentile(v, 0.1), 14.0);
  EXPECT_DOUBLE_EQ(*percentile(v, 0.9), 46.0);
  EXPECT_FALSE(percentile(v, -0.1).has_value());
  EXPECT_FALSE(percentile(v, 1.5).has_value());
}

TEST(AgentStats, SummarySpreadAndBounds) {
  const auto s = summarize({396.0, 392.0, 400.0});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->count, 3U);
  EXPECT_DOUBLE_EQ(s->median, 396.0);
  EXPECT_DOUBLE_EQ(s->min, 392.0);
  EXPECT_DOUBLE_EQ(s->max, 400.0);
  EXPECT_DOUBLE_EQ(s->mean, 396.0);
  EXPECT_NEAR(s->spread_pct, 8.0 / 396.0 * 100.0, 1e-12);
  EXPECT_FALSE(summarize({}).has_value());
}

TEST(AgentStats, ZeroMedianHasNoSpread) {
  const auto s = summarize({0.0, 0.0, 0.0});
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->spread_pct, 0.0);
}
