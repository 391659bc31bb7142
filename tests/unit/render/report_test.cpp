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
  const auto j =
      check_report_json(inv, "two-4090", {finding("iommu.mode", "node", Severity::ok, "IOMMU is in passthrough")});
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
  for (const char* k : {"check", "subject", "severity", "summary", "observed", "expected", "remediation"}) {
    EXPECT_TRUE(f.contains(k)) << k;
  }
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

namespace {
// Six bridges above the one GPU, each with the same ACS finding whose fix names the bridge itself.
Inventory six_bridges(std::vector<std::string>* bdfs) {
  Inventory inv = small_inventory();
  for (const char* b :
       {"0000:00:01.1", "0000:40:03.1", "0000:80:01.1", "0000:80:01.2", "0000:c0:01.1", "0000:c0:01.2"}) {
    PciDevice d;
    d.bdf = b;
    d.kind = DeviceKind::bridge;
    inv.devices.push_back(d);
    bdfs->push_back(b);
  }
  return inv;
}

Finding acs(const std::string& bdf) {
  return finding("pcie.acs", bdf, Severity::error, "ACS control 0x001d on a bridge between peers",
                 "Set platform.fixes.acs: true, or by hand `setpci -s " + bdf + " ECAP_ACS+6.w=0000:003c`.");
}
}  // namespace

// Findings that differ only where they name their own subject (the ACS fix's setpci address) are
// one row: the subjects counted and listed, the subject's place in the fix shown as <address>.
TEST(Report, IdenticalErrorsOnSixBridgesAreOneRow) {
  std::vector<std::string> bdfs;
  const auto inv = six_bridges(&bdfs);
  std::vector<Finding> findings;
  for (const auto& b : bdfs) { findings.push_back(acs(b)); }
  const auto rows = group_findings(inv, findings);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].subject, "6 bridges");
  EXPECT_EQ(rows[0].subjects, bdfs);
  EXPECT_EQ(rows[0].remediation,
            "Set platform.fixes.acs: true, or by hand `setpci -s <address> ECAP_ACS+6.w=0000:003c`.");
  const std::string t = render_check_table(inv, "p", findings);
  EXPECT_NE(t.find("ERROR     pcie.acs  6 bridges  ACS control 0x001d on a bridge between peers\n"), std::string::npos)
      << t;
  EXPECT_NE(t.find("on: 0000:00:01.1, 0000:40:03.1, 0000:80:01.1, 0000:80:01.2, 0000:c0:01.1, 0000:c0:01.2\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("`setpci -s <address> ECAP_ACS+6.w=0000:003c`"), std::string::npos) << t;
  EXPECT_EQ(t.find("setpci -s 0000:"), std::string::npos) << t;
  EXPECT_NE(t.find("6 error(s), 0 warning(s), 0 ok (6 findings in 1 rows; --verbose lists each)"), std::string::npos)
      << t;
  // --verbose keeps one row per finding, each fix with its own address.
  const std::string v = render_check_table(inv, "p", findings, true);
  for (const auto& b : bdfs) { EXPECT_NE(v.find("setpci -s " + b + " ECAP_ACS"), std::string::npos) << b; }
}

// A single finding keeps its own text; findings whose texts differ in more than their subject keep
// their own rows; "node" findings never group.
TEST(Report, OnlyFindingsThatDifferByTheirSubjectGroup) {
  std::vector<std::string> bdfs;
  const auto inv = six_bridges(&bdfs);
  auto other = acs(bdfs[1]);
  other.summary = "ACS control 0x0015 on a bridge between peers";
  const auto rows = group_findings(inv, {acs(bdfs[0]), other, acs(bdfs[2])});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].subject, "2 bridges");
  EXPECT_EQ(rows[1].subject, bdfs[1]);
  EXPECT_EQ(rows[1].remediation, other.remediation);  // its own address, not <address>
  const auto single = group_findings(inv, {acs(bdfs[0])});
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].remediation, acs(bdfs[0]).remediation);
  const auto nodes = group_findings(
      inv, {finding("iommu.mode", "node", Severity::error, "x"), finding("iommu.mode", "node", Severity::error, "x")});
  EXPECT_EQ(nodes.size(), 2u);
}

// Kernels that differ only by their release share a row, the release's place shown as <kernel>.
TEST(Report, KernelsGroupWithTheirReleaseAsStandIn) {
  const auto inv = small_inventory();
  auto k = [](const std::string& r) {
    return finding("driver.kernels", r, Severity::error, "nvidia-p2p/550.90.07 is not installed for " + r,
                   "Install linux-headers-" + r + ", then `p2pnode apply`.");
  };
  const auto rows = group_findings(inv, {k("6.1.0-55-amd64"), k("6.1.0-56-amd64")});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].subject, "2 kernels");
  EXPECT_EQ(rows[0].summary, "nvidia-p2p/550.90.07 is not installed for <kernel>");
  EXPECT_EQ(rows[0].remediation, "Install linux-headers-<kernel>, then `p2pnode apply`.");
}
