#include "p2pnode/agent/options.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace p2pnode::agent;

namespace {
const std::vector<std::string> kKeys{"peer_access", "ce_write_bandwidth", "latency", "integrity"};

ParseOutcome parse(std::vector<const char*> args) {
  args.insert(args.begin(), "p2pnode-agent");
  return parse_options(static_cast<int>(args.size()), args.data(), kKeys, "1.2.3");
}
}  // namespace

TEST(AgentOptions, Defaults) {
  const auto r = parse({});
  ASSERT_TRUE(r.options.has_value()) << r.message;
  const Options& o = *r.options;
  EXPECT_EQ(o.format, Format::json);
  EXPECT_EQ(o.size_bytes, 512 * kMiB);
  EXPECT_EQ(o.iterations, 3);
  EXPECT_TRUE(o.mode_auto);  // decided at run time from the interconnect (choose_mode)
  EXPECT_EQ(o.copies, 12);
  EXPECT_EQ(o.warmup, 1);
  EXPECT_EQ(o.latency_accesses, 8192);
  EXPECT_EQ(o.latency_sms, 0);  // every SM
  EXPECT_FALSE(o.timings);
  EXPECT_TRUE(o.cases.empty());
  EXPECT_FALSE(o.seed.has_value());
  EXPECT_FALSE(o.inject_corruption.has_value());
}

TEST(AgentOptions, AllOptions) {
  const auto r = parse({"--format",
                        "table",
                        "--cases",
                        "latency,integrity",
                        "--pairs",
                        "0:1,1:0",
                        "--size",
                        "64MiB",
                        "--host-size",
                        "1M",
                        "--iterations",
                        "5",
                        "--copies",
                        "4",
                        "--warmup",
                        "1",
                        "--time-budget",
                        "2.5",
                        "--mode",
                        "rounds",
                        "--seed",
                        "42",
                        "--inject-corruption",
                        "1:0"});
  ASSERT_TRUE(r.options.has_value()) << r.message;
  const Options& o = *r.options;
  EXPECT_EQ(o.format, Format::table);
  EXPECT_EQ(o.cases, (std::vector<std::string>{"latency", "integrity"}));
  EXPECT_EQ(o.pairs, "0:1,1:0");
  EXPECT_EQ(o.size_bytes, 64 * kMiB);
  EXPECT_EQ(o.host_size_bytes, kMiB);
  EXPECT_EQ(o.iterations, 5);
  EXPECT_EQ(o.copies, 4);
  EXPECT_EQ(o.warmup, 1);
  EXPECT_DOUBLE_EQ(o.time_budget_s, 2.5);
  EXPECT_EQ(o.mode, Mode::rounds);
  EXPECT_FALSE(o.mode_auto);
  EXPECT_EQ(o.seed, 42U);
  EXPECT_EQ(o.inject_corruption, "1:0");
}

TEST(AgentOptions, UsageErrorsExitTwo) {
  for (const auto& args : std::vector<std::vector<const char*>>{{"--bogus"},
                                                                {"--cases", "nope"},
                                                                {"--size", "12XB"},
                                                                {"--size", "0"},
                                                                {"--size", "1K"},
                                                                {"--mode", "parallel"},
                                                                {"--iterations", "0"},
                                                                {"--pairs", "0-1"},
                                                                {"--inject-corruption", "0:1,1:0"},
                                                                // "all" and an empty list would mean every pair
                                                                // of 2^20 GPUs while the shape is checked
                                                                {"--inject-corruption", "all"},
                                                                {"--inject-corruption", ""},
                                                                {"--pairs", ""},
                                                                {"--format", "xml"}}) {
    const auto r = parse(args);
    EXPECT_FALSE(r.options.has_value()) << args[0];
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_FALSE(r.message.empty());
  }
}

TEST(AgentOptions, HelpAndVersionExitZero) {
  auto h = parse({"--help"});
  EXPECT_FALSE(h.options.has_value());
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.message.find("--inject-corruption"), std::string::npos);
  auto v = parse({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.message, "p2pnode-agent 1.2.3");
}

TEST(AgentOptions, ParseSize) {
  EXPECT_EQ(parse_size("512"), 512 * kMiB);
  EXPECT_EQ(parse_size("512MiB"), 512 * kMiB);
  EXPECT_EQ(parse_size("2g"), 2048 * kMiB);
  EXPECT_EQ(parse_size("4096B"), 4096U);
  EXPECT_EQ(parse_size("4KiB"), 4096U);
  EXPECT_FALSE(parse_size("").has_value());
  EXPECT_FALSE(parse_size("MiB").has_value());
  EXPECT_FALSE(parse_size("-1").has_value());
  EXPECT_FALSE(parse_size("65GiB").has_value());
  EXPECT_FALSE(parse_size("99999999999999999999").has_value());
}

TEST(AgentOptions, NvmeDoorbellOptions) {
  const auto d = parse({});
  ASSERT_TRUE(d.options.has_value());
  EXPECT_TRUE(d.options->nvme.empty());
  EXPECT_EQ(d.options->writer, "both");
  EXPECT_EQ(d.options->nvme_ready_timeout_ms, 10000);
  EXPECT_EQ(d.options->nvme_completion_timeout_ms, 2000);
  const auto r =
      parse({"--nvme", "bdf=0000:0b:00.0,serial=21165N801234,gpu=0000:0a:00.0", "--nvme", "bdf=0000:0c:00.0,serial=X",
             "--writer", "gpu", "--nvme-ready-timeout-ms", "500", "--nvme-completion-timeout-ms", "250"});
  ASSERT_TRUE(r.options.has_value()) << r.message;
  EXPECT_EQ(r.options->nvme.size(), 2u);
  EXPECT_EQ(r.options->nvme[1], "bdf=0000:0c:00.0,serial=X");
  EXPECT_EQ(r.options->writer, "gpu");
  EXPECT_EQ(r.options->nvme_ready_timeout_ms, 500);
  EXPECT_EQ(r.options->nvme_completion_timeout_ms, 250);
  const auto bad = parse({"--writer", "cpu"});
  EXPECT_FALSE(bad.options.has_value());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_FALSE(parse({"--nvme-ready-timeout-ms", "0"}).options.has_value());
}

TEST(AgentOptions, ModeSerialAndTimingsFlag) {
  const auto r = parse({"--mode", "serial", "--timings", "--latency-sms", "8"});
  ASSERT_TRUE(r.options.has_value()) << r.message;
  EXPECT_EQ(r.options->mode, Mode::serial);
  EXPECT_FALSE(r.options->mode_auto);
  EXPECT_TRUE(r.options->timings);
  EXPECT_EQ(r.options->latency_sms, 8);
  EXPECT_EQ(parse({"--mode", "auto"}).options->mode_auto, true);
}
