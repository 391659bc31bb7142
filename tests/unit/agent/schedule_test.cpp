#include "p2pnode/agent/schedule.hpp"

#include <gtest/gtest.h>

#include <set>
#include <utility>

using namespace p2pnode::agent;

namespace {
std::set<std::pair<int, int>> as_set(const std::vector<Round>& rounds) {
  std::set<std::pair<int, int>> s;
  for (const auto& r : rounds) {
    for (const auto& p : r) { s.insert({p.src, p.dst}); }
  }
  return s;
}
}  // namespace

TEST(AgentSchedule, OrderedPairsSerialOrder) {
  const auto p = ordered_pairs(3);
  const std::vector<Pair> want{{0, 1}, {0, 2}, {1, 0}, {1, 2}, {2, 0}, {2, 1}};
  EXPECT_EQ(p, want);
  EXPECT_TRUE(ordered_pairs(1).empty());
  EXPECT_TRUE(ordered_pairs(0).empty());
}

TEST(AgentSchedule, CircleRoundsCoverEveryPairOnceAndAreDisjoint) {
  for (int n = 2; n <= 9; ++n) {
    const auto rounds = circle_rounds(n);
    EXPECT_EQ(static_cast<int>(rounds.size()), n % 2 == 0 ? n - 1 : n) << "n=" << n;
    std::size_t total = 0;
    for (const auto& r : rounds) {
      EXPECT_TRUE(is_disjoint(r)) << "n=" << n;
      EXPECT_EQ(static_cast<int>(r.size()), n / 2) << "n=" << n;
      for (const auto& p : r) { EXPECT_LT(p.src, p.dst); }
      total += r.size();
    }
    EXPECT_EQ(total, static_cast<std::size_t>(n * (n - 1) / 2)) << "n=" << n;
    std::set<std::pair<int, int>> want;
    for (const auto& p : unordered_pairs(n)) { want.insert({p.src, p.dst}); }
    EXPECT_EQ(as_set(rounds), want) << "n=" << n;
  }
  EXPECT_TRUE(circle_rounds(1).empty());
}

TEST(AgentSchedule, RoundsForFourGpus) {
  const auto r = circle_rounds(4);
  ASSERT_EQ(r.size(), 3U);
  EXPECT_EQ(r[0], (Round{{0, 3}, {1, 2}}));
  EXPECT_EQ(r[1], (Round{{0, 2}, {1, 3}}));
  EXPECT_EQ(r[2], (Round{{0, 1}, {2, 3}}));
}

TEST(AgentSchedule, UnidirectionalStepsBothDirections) {
  const auto all = ordered_pairs(4);
  const auto serial = unidirectional_steps(4, Mode::serial, all);
  EXPECT_EQ(serial.size(), 12U);
  for (const auto& s : serial) { EXPECT_EQ(s.size(), 1U); }
  const auto rounds = unidirectional_steps(4, Mode::rounds, all);
  EXPECT_EQ(rounds.size(), 6U);  // 2 (n - 1)
  std::set<std::pair<int, int>> seen;
  for (const auto& s : rounds) {
    EXPECT_TRUE(is_disjoint(s));
    for (const auto& p : s) { EXPECT_TRUE(seen.insert({p.src, p.dst}).second); }
  }
  EXPECT_EQ(seen.size(), 12U);
}

TEST(AgentSchedule, OddCountSitsOneOut) {
  const auto rounds = unidirectional_steps(5, Mode::rounds, ordered_pairs(5));
  EXPECT_EQ(rounds.size(), 10U);  // 5 rounds, two directions each
  EXPECT_EQ(as_set(rounds).size(), 20U);
}

TEST(AgentSchedule, SelectedPairsOnly) {
  const std::vector<Pair> sel{{0, 1}, {3, 2}};
  const auto rounds = unidirectional_steps(4, Mode::rounds, sel);
  EXPECT_EQ(as_set(rounds), (std::set<std::pair<int, int>>{{0, 1}, {3, 2}}));
  const auto bidir = bidirectional_steps(4, Mode::rounds, sel);
  ASSERT_EQ(bidir.size(), 1U);  // {0,1} and {2,3} share the third circle round
  EXPECT_EQ(bidir[0], (Round{{0, 1}, {2, 3}}));
  const auto bidir_serial = bidirectional_steps(4, Mode::serial, sel);
  EXPECT_EQ(bidir_serial.size(), 2U);
}

TEST(AgentSchedule, IsDisjointRejectsSharedGpu) {
  EXPECT_TRUE(is_disjoint({{0, 1}, {2, 3}}));
  EXPECT_FALSE(is_disjoint({{0, 1}, {1, 2}}));
  EXPECT_FALSE(is_disjoint({{2, 2}}));
}

TEST(AgentSchedule, ParsePairs) {
  std::string err;
  EXPECT_EQ(parse_pairs("all", 3, &err)->size(), 6U);
  EXPECT_EQ(*parse_pairs("0:1,2:0,0:1", 3, &err), (std::vector<Pair>{{0, 1}, {2, 0}}));
  EXPECT_FALSE(parse_pairs("0:3", 3, &err).has_value());
  EXPECT_NE(err.find("outside"), std::string::npos);
  EXPECT_FALSE(parse_pairs("1:1", 3, &err).has_value());
  EXPECT_FALSE(parse_pairs("01", 3, &err).has_value());
  EXPECT_FALSE(parse_pairs("a:b", 3, &err).has_value());
  EXPECT_FALSE(parse_pairs("0:1x", 3, &err).has_value());
  EXPECT_FALSE(parse_pairs(",", 3, &err).has_value());
}

TEST(AgentSchedule, AutoModeIsRoundsOnlyWhenEveryPairHasNvlink) {
  const auto all4 = ordered_pairs(4);
  // 4 GPUs on NVSwitch: 18 links between every pair.
  auto c = choose_mode(all4, [](int, int) -> std::optional<int> { return 18; });
  EXPECT_EQ(c.mode, Mode::rounds);
  EXPECT_NE(c.reason.find("NVLink"), std::string::npos);
  // Two NVLink bridges (0-1, 2-3) on a PCIe box: 0-2 is PCIe, so serial, naming that pair.
  c = choose_mode(all4, [](int a, int b) -> std::optional<int> { return (a / 2 == b / 2) ? 4 : 0; });
  EXPECT_EQ(c.mode, Mode::serial);
  EXPECT_NE(c.reason.find("GPU 0 and GPU 2"), std::string::npos) << c.reason;
  // Only the bridged pairs selected: rounds.
  c = choose_mode({{0, 1}, {1, 0}, {2, 3}},
                  [](int a, int b) -> std::optional<int> { return (a / 2 == b / 2) ? 4 : 0; });
  EXPECT_EQ(c.mode, Mode::rounds);
  // Unknown (no NVML): serial.
  c = choose_mode(all4, [](int, int) -> std::optional<int> { return std::nullopt; });
  EXPECT_EQ(c.mode, Mode::serial);
  EXPECT_NE(c.reason.find("unknown"), std::string::npos);
  EXPECT_EQ(choose_mode({}, [](int, int) -> std::optional<int> { return 18; }).mode, Mode::serial);
}
