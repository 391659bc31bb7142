// Units as people write them in profiles, and as people are told when they got one wrong.
#include "core/units.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace p2pnode;
using namespace std::chrono_literals;

TEST(Units, SizesGood) {
  EXPECT_EQ(*parse_size("32GiB"), 32 * GiB);
  EXPECT_EQ(*parse_size("256MiB"), 256 * MiB);
  EXPECT_EQ(*parse_size("256 MiB"), 256 * MiB);
  EXPECT_EQ(*parse_size(" 16MiB "), 16 * MiB);
  EXPECT_EQ(*parse_size("128KiB"), 128 * KiB);
  EXPECT_EQ(*parse_size("1TiB"), TiB);
  EXPECT_EQ(*parse_size("24GB"), 24'000'000'000u);
  EXPECT_EQ(*parse_size("1.5GiB"), 3 * GiB / 2);
  EXPECT_EQ(*parse_size("4097B"), 4097u);
  EXPECT_EQ(*parse_size("0B"), 0u);
  EXPECT_EQ(*parse_size("16384TiB"), 16384 * TiB);
}

TEST(Units, SizesBad) {
  auto neg = parse_size("-24GiB");
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.error().message, "'-24GiB' is not a size: it is negative (expected e.g. 32GiB or 256MiB)");
  auto nounit = parse_size("24");
  ASSERT_FALSE(nounit.ok());
  EXPECT_EQ(nounit.error().message,
            "'24' has no size unit (expected one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; write 24B for bytes)");
  auto unknown = parse_size("32GB/s");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message,
            "'32GB/s' has an unknown size unit 'GB/s' (expected one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; "
            "GB/s is a bandwidth, a size has no /s)");
  EXPECT_EQ(parse_size("1.5B").error().message, "'1.5B' is not a whole number of bytes");
  EXPECT_EQ(parse_size("99999999999TiB").error().message, "'99999999999TiB' is too large a size");
  EXPECT_EQ(parse_size("GiB").error().message,
            "'GiB' is not a size: it does not start with a number (expected e.g. 32GiB or 256MiB)");
  EXPECT_EQ(parse_size("1..5GiB").error().message,
            "'1..5GiB' is not a size: the number is malformed (expected e.g. 32GiB or 256MiB)");
  EXPECT_FALSE(parse_size("").ok());
  EXPECT_FALSE(parse_size("1e3GiB").ok());
  EXPECT_FALSE(parse_size("32gib").ok());  // units are case-sensitive: Gb is not GB
  EXPECT_FALSE(parse_size("+32GiB").ok());
  EXPECT_FALSE(parse_size("nan GiB").ok());
  EXPECT_FALSE(parse_size(std::string(400, '9') + "B").ok());  // huge: never UB
}

TEST(Units, BandwidthGoodAndBad) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("25GB/s")->bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25GB/s")->gbps(), 25.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1.5 GiB/s")->bytes_per_s, 1.5 * 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("800MB/s")->bytes_per_s, 800e6);
  EXPECT_EQ(parse_bandwidth("25GiB").error().message,
            "'25GiB' has an unknown bandwidth unit 'GiB' (expected one of B/s, KB/s, MB/s, GB/s, MiB/s, GiB/s; "
            "GiB is a size, a bandwidth is per second: GiB/s)");
  EXPECT_EQ(parse_bandwidth("25").error().message,
            "'25' has no bandwidth unit (expected one of B/s, KB/s, MB/s, GB/s, MiB/s, GiB/s, e.g. 25GB/s)");
  EXPECT_EQ(parse_bandwidth("-1GB/s").error().message,
            "'-1GB/s' is not a bandwidth: it is negative (expected e.g. 25GB/s)");
  EXPECT_FALSE(parse_bandwidth("fast").ok());
  EXPECT_FALSE(parse_bandwidth(std::string(400, '9') + "GB/s").ok());
}

TEST(Units, DurationsGoodAndBad) {
  EXPECT_EQ(*parse_duration("2us"), 2us);
  EXPECT_EQ(*parse_duration("2µs"), 2us);
  EXPECT_EQ(*parse_duration("500ms"), 500ms);
  EXPECT_EQ(*parse_duration("6h"), 6h);
  EXPECT_EQ(*parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(*parse_duration("10m"), 10min);
  EXPECT_EQ(*parse_duration("1d"), 24h);
  EXPECT_EQ(*parse_duration("250ns"), 250ns);
  EXPECT_EQ(parse_duration("2").error().message,
            "'2' has no duration unit (expected one of ns, us, µs, ms, s, m, h, d, e.g. 2us or 6h)");
  EXPECT_EQ(parse_duration("2 fortnights").error().message,
            "'2 fortnights' has an unknown duration unit 'fortnights' (expected one of ns, us, µs, "
            "ms, s, m, h, d)");
  EXPECT_EQ(parse_duration("-5s").error().message,
            "'-5s' is not a duration: it is negative (expected e.g. 2us, 500ms or 6h)");
  EXPECT_EQ(parse_duration("999999999999d").error().message, "'999999999999d' is too long a duration");
  EXPECT_FALSE(parse_duration(std::string(400, '9') + "d").ok());
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_size(32 * GiB), "32 GiB");
  EXPECT_EQ(format_size(256 * MiB), "256 MiB");
  EXPECT_EQ(format_size(128 * KiB), "128 KiB");
  EXPECT_EQ(format_size(2 * TiB), "2 TiB");
  EXPECT_EQ(format_size(4097), "4.00 KiB");
  EXPECT_EQ(format_size(1536 * MiB), "1536 MiB");  // exact in MiB beats a rounded GiB
  EXPECT_EQ(format_size(GiB + 1), "1.00 GiB");
  EXPECT_EQ(format_size(512), "512 B");
  EXPECT_EQ(format_size(0), "0 B");
  EXPECT_EQ(format_duration(250ns), "250 ns");
  EXPECT_EQ(format_duration(2us), "2 us");
  EXPECT_EQ(format_duration(500ms), "500 ms");
  EXPECT_EQ(format_duration(6h), "6 h");
  EXPECT_EQ(format_duration(10min), "10 min");
  EXPECT_EQ(format_duration(1500ms), "1.5 s");
  EXPECT_EQ(format_bandwidth(Bandwidth{25e9}), "25.0 GB/s");
}

TEST(Units, RoundTripOfFormattedSizes) {
  for (Bytes b : {16 * MiB, 32 * MiB, 256 * MiB, 24 * GiB, 32 * GiB, 128 * GiB}) {
    std::string s = format_size(b);
    s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
    EXPECT_EQ(*parse_size(s), b) << s;
  }
}
