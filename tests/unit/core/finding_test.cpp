// Findings and plans are data: their JSON and the worst severity.
#include "core/finding.hpp"

#include <gtest/gtest.h>

#include "core/plan.hpp"

using namespace p2pnode;

TEST(Finding, JsonHasEveryField) {
  Finding f{"pcie.link", "0000:01:00.0", Severity::warning, "x8 of x16", {{"width", 8}}, {{"width", 16}}, "reseat"};
  const auto j = to_json(f);
  EXPECT_EQ(j["check"], "pcie.link");
  EXPECT_EQ(j["subject"], "0000:01:00.0");
  EXPECT_EQ(j["severity"], "warning");
  EXPECT_EQ(j["summary"], "x8 of x16");
  EXPECT_EQ(j["observed"]["width"], 8);
  EXPECT_EQ(j["expected"]["width"], 16);
  EXPECT_EQ(j["remediation"], "reseat");
  EXPECT_EQ(j.size(), 7u);
}

TEST(Finding, Worst) {
  EXPECT_EQ(worst({}), Severity::ok);
  Finding ok, warn, err;
  warn.severity = Severity::warning;
  err.severity = Severity::error;
  EXPECT_EQ(worst({ok, warn}), Severity::warning);
  EXPECT_EQ(worst({err, ok, warn}), Severity::error);
  EXPECT_STREQ(to_string(Severity::ok), "ok");
  EXPECT_STREQ(to_string(Severity::error), "error");
}

TEST(Plan, FlagsAndJson) {
  Plan p;
  EXPECT_TRUE(p.empty());
  EXPECT_FALSE(p.reboot_required());
  p.steps.push_back({"pcie.acs", "0000:00:01.1", "clear ACS", false, false, {{"control_before", 29}}});
  EXPECT_FALSE(p.reboot_required());
  p.steps.push_back({"kernel.cmdline", "node", "add iommu=pt", true, false, nullptr});
  EXPECT_TRUE(p.reboot_required());
  EXPECT_FALSE(p.needs_operator());
  const auto j = to_json(p);
  EXPECT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["reboot_required"], true);
  EXPECT_EQ(j["steps"][0]["details"]["control_before"], 29);
  StepResult r{
      "pcie.acs", "0000:00:01.1", StepOutcome::changed, "0x001d -> 0x0001", {{"control", 29}}, {{"control", 1}}, 1};
  const auto rj = to_json(r);
  EXPECT_EQ(rj["outcome"], "changed");
  EXPECT_EQ(rj["wrote"], true);
  EXPECT_EQ(rj["writes"], 1);
  EXPECT_STREQ(to_string(StepOutcome::reboot_required), "reboot_required");
}
