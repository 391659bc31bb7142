// Rendering: the JSON document's shape and the table's rows, wrapping and summary line.
#include "render/report.hpp"

#include <gtest/gtest.h>

#include "core/units.hpp"

using namespace p2pnode;
using namespace p2pnode::render;

namespace {
Inventory small_inventory() {
  Inventory inv;
  inv.hostname = "box";
  inv.kernel.release = "6.1.0-56-amd64";
  inv.iommu.mode = IommuMode::passthrough;
  PciDevice g;
  g.bdf = "0000:01:00.0";
  g.vendor = 0x10de;
  g.device = 0x2684;
  g.kind = DeviceKind::gpu;
  g.numa_node = 0;
  g.root_complex = "pci0000:00";
  g.upstream = {"0000:00:01.1"};
  g.link.current_gts = 16.0;
  g.link.current_width = 16;
  g.bars = {Bar{1, 0x28800000000, 0x28fffffffff, 0x14220c}};
  inv.devices.push_back(g);
  return inv;
}

Finding finding(std::string check, std::string subject, Severity sev, std::string summary, std::string fix = "") {
  Finding f;
  f.check = std::move(check);
  f.subject = std::move(subject);
  f.severity = sev;
  f.summary = std::move(summary);
  f.remediation = std::move(fix);
  f.observed = {{"bytes", 1}};
  return f;
}
}  // namespace

TEST(Report, JsonDocumentShape) {
  const auto inv = small_inventory();
  const auto j = check_report_json(inv, "two-4090",
                                   {finding("iommu.mode", "node", Severity::ok, "IOMMU is in passthrough")});
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["profile"], "two-4090");
  EXPECT_EQ(j["node"]["hostname"], "box");
  EXPECT_EQ(j["node"]["iommu"], "passthrough");
  EXPECT_EQ(j["node"]["driver_version"], "");
  ASSERT_EQ(j["node"]["gpus"].size(), 1u);
  const auto& g = j["node"]["gpus"][0];
  EXPECT_EQ(g["bdf"], "0000:01:00.0");
  EXPECT_EQ(g["vendor_id"], "0x10de");
  EXPECT_EQ(g["device_id"], "0x2684");
  EXPECT_EQ(g["name"], "GeForce RTX 4090");
  EXPECT_EQ(g["aperture_bytes"], 32 * GiB);
  EXPECT_EQ(g["aperture_bytes"].type(), nlohmann::json::value_t::number_unsigned);  // a number, not a string
  EXPECT_EQ(g["link_width"], 16);
  EXPECT_FALSE(g.contains("max_link_width"));  // unknown fields are left out, not null
  ASSERT_EQ(j["findings"].size(), 1u);
  const auto& f = j["findings"][0];
  for (const char* k : {"check", "subject", "severity", "summary", "observed", "expected", "remediation"})
    EXPECT_TRUE(f.contains(k)) << k;
  EXPECT_EQ(f["severity"], "ok");
  EXPECT_TRUE(f["expected"].is_null());
}

TEST(Report, TableRowsFixesAndSummary) {
  const auto inv = small_inventory();
  const std::string t = render_check_table(
      inv, "two-4090",
      {finding("gpu.models", "node", Severity::ok, "1 × GeForce RTX 4090"),
       finding("pcie.link", "0000:01:00.0", Severity::warning, "running at Gen1", "Reseat the card."),
       finding("iommu.mode", "node", Severity::error, "IOMMU translating", "Add iommu=pt.")});
  EXPECT_EQ(t,
            "p2pnode check: box, profile two-4090, kernel 6.1.0-56-amd64\n"
            "1 GPU(s), 0 NVMe controller(s), IOMMU passthrough, NVIDIA driver not loaded\n"
            "\n"
            "RESULT    CHECK       SUBJECT       SUMMARY\n"
            "ok        gpu.models  node          1 × GeForce RTX 4090\n"
            "WARNING   pcie.link   0000:01:00.0  running at Gen1\n"
            "            fix: Reseat the card.\n"
            "ERROR     iommu.mode  node          IOMMU translating\n"
            "            fix: Add iommu=pt.\n"
            "\n"
            "1 error(s), 1 warning(s), 1 ok\n");
}

TEST(Report, EmptyInventoryStillRenders) {
  const std::string t = render_check_table(Inventory{}, "x", {});
  EXPECT_NE(t.find("(no hostname)"), std::string::npos);
  EXPECT_NE(t.find("kernel ?"), std::string::npos);
  EXPECT_NE(t.find("0 error(s), 0 warning(s), 0 ok"), std::string::npos);
}

TEST(Report, Wrap) {
  EXPECT_EQ(wrap("one two three four", 14, "  "), "  one two\n  three four\n");
  EXPECT_EQ(wrap("", 10, "  "), "");
  // A word longer than the width gets a line of its own, unbroken.
  EXPECT_EQ(wrap("a " + std::string(20, 'x') + " b", 10, ""), "a\n" + std::string(20, 'x') + "\nb\n");
  EXPECT_EQ(wrap("  spaced   out  ", 80, "> "), "> spaced out\n");
}
