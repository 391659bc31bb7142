#include <gtest/gtest.h>

#include "engine/config.hpp"

using namespace p2pnode::engine;

TEST(DaemonConfig, EmptyFileGivesDefaults) {
  auto r = load_config_text("", "p2pnode.yaml");
  ASSERT_TRUE(r.config) << r.diagnostics.format();
  EXPECT_EQ(r.config->listen.display(), "127.0.0.1:9470");
  EXPECT_EQ(r.config->state_file(), "/var/lib/p2pnode/state.json");
  EXPECT_TRUE(r.config->apply);
  EXPECT_TRUE(r.config->selftest_on_start);
}

TEST(DaemonConfig, ReadsEveryKey) {
  auto r = load_config_text(R"(apiVersion: p2pnode/v1
kind: DaemonConfig
listen: "[::1]:0"
token_file: /etc/p2pnode/t
profiles_dir: /p
state_dir: /s
apply: false
device_monitor: false
agent:
  path: /opt/agent
  args: [--mode, rounds]
selftest:
  schedule: 2h
  time_limit: 90s
  on_start: false
http:
  threads: 4
  max_body: 8KiB
)",
                            "c.yaml");
  ASSERT_TRUE(r.config) << r.diagnostics.format();
  const auto& c = *r.config;
  EXPECT_EQ(c.listen.host, "::1");
  EXPECT_EQ(c.listen.port, 0);
  EXPECT_EQ(c.listen.display(), "[::1]:0");
  EXPECT_EQ(c.token_file, "/etc/p2pnode/t");
  EXPECT_EQ(c.state_file(), "/s/state.json");
  EXPECT_FALSE(c.apply);
  EXPECT_FALSE(c.device_monitor);
  EXPECT_EQ(c.agent_path, "/opt/agent");
  EXPECT_EQ(c.agent_args, (std::vector<std::string>{"--mode", "rounds"}));
  EXPECT_EQ(c.selftest_schedule, std::chrono::hours(2));
  EXPECT_EQ(c.selftest_time_limit, std::chrono::seconds(90));
  EXPECT_FALSE(c.selftest_on_start);
  EXPECT_EQ(c.http_threads, 4);
  EXPECT_EQ(c.http_max_body, 8u * 1024);
}

TEST(DaemonConfig, ErrorsNameLineAndKey) {
  auto r = load_config_text("listen: 127.0.0.1:9470\nlisen_typo: 1\nstate_dir: relative/path\n", "bad.yaml");
  EXPECT_FALSE(r.config);
  const std::string text = r.diagnostics.format();
  EXPECT_NE(text.find("bad.yaml:2:"), std::string::npos) << text;
  EXPECT_NE(text.find("listen"), std::string::npos) << text;  // the suggestion
  EXPECT_NE(text.find("bad.yaml:3:"), std::string::npos) << text;
  EXPECT_NE(text.find("absolute path"), std::string::npos) << text;
}

TEST(DaemonConfig, NonLoopbackNeedsToBeAllowed) {
  EXPECT_FALSE(load_config_text("listen: 0.0.0.0:9470\n", "c").config);
  auto ok = load_config_text("listen: 0.0.0.0:9470\nallow_non_loopback: true\n", "c");
  ASSERT_TRUE(ok.config) << ok.diagnostics.format();
  EXPECT_FALSE(ok.config->listen.is_loopback());
}

TEST(DaemonConfig, RejectsBadValues) {
  for (const char* text : {"listen: 127.0.0.1\n", "listen: 127.0.0.1:99999\n", "http:\n  threads: 0\n",
                           "selftest:\n  schedule: 10s\n", "apply: maybe\n", "- a list\n", "kind: NodeProfile\n",
                           "agent:\n  path: p2pnode-agent\n", "listen: [1, 2]\n", "{unclosed\n"}) {
    auto r = load_config_text(text, "c");
    EXPECT_FALSE(r.config) << text;
    EXPECT_FALSE(r.diagnostics.empty()) << text;
  }
}

TEST(DaemonConfig, MissingFileIsReported) {
  auto r = load_config_file("/nonexistent/p2pnode.yaml");
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.diagnostics.format().find("no such file"), std::string::npos);
}

TEST(ListenAddress, Parses) {
  EXPECT_EQ(parse_listen("localhost:80")->port, 80);
  EXPECT_TRUE(parse_listen("127.0.0.2:1")->is_loopback());
  std::string why;
  EXPECT_FALSE(parse_listen(":80", &why));
  EXPECT_FALSE(parse_listen("::1:80", &why));
  EXPECT_NE(why.find("brackets"), std::string::npos);
  EXPECT_FALSE(parse_listen("[::1]80", &why));
  EXPECT_FALSE(parse_listen("host:-1", &why));
}

TEST(DaemonConfig, ShippedExampleIsValid) {
  auto r = load_config_file(std::filesystem::path(P2PNODE_SOURCE_DIR) / "systemd/p2pnode.yaml");
  ASSERT_TRUE(r.config) << r.diagnostics.format();
  EXPECT_EQ(r.config->listen.display(), "127.0.0.1:9470");
}
