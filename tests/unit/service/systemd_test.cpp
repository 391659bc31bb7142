#include <gtest/gtest.h>

#include "service/systemd.hpp"

using p2pnode::engine::LogEvent;
using p2pnode::engine::LogLevel;
using p2pnode::service::journal_fields;

TEST(Journal, StructuredFieldsWhereTheEventHasThem) {
  const auto f =
      journal_fields({LogLevel::notice, "PCI device 0000:00:02.0 removed: reconciling", "", "monitor", "0000:00:02.0"});
  const std::vector<std::string> want = {"MESSAGE=PCI device 0000:00:02.0 removed: reconciling", "PRIORITY=5",
                                         "SYSLOG_IDENTIFIER=p2pnode", "STEP=monitor", "DEVICE=0000:00:02.0"};
  EXPECT_EQ(f, want);
}

TEST(Journal, EmptyFieldsAreLeftOut) {
  // journald stores an empty CHECK= as a field; every entry would carry CHECK, STEP and DEVICE.
  const auto f = journal_fields({LogLevel::error, "no NVIDIA GPU found on the PCI bus", "gpu.models", "check", "node"});
  EXPECT_EQ(f.size(), 6u);
  EXPECT_EQ(f[1], "PRIORITY=3");
  const auto bare = journal_fields({LogLevel::info, "configuration reloaded", "", "", ""});
  const std::vector<std::string> want = {"MESSAGE=configuration reloaded", "PRIORITY=6", "SYSLOG_IDENTIFIER=p2pnode"};
  EXPECT_EQ(bare, want);
}
