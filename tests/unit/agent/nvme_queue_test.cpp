// Admin queue entries, the Identify Controller command, completion decoding and phase polling,
// Identify data parsing, --nvme specs and drive discovery.
#include "p2pnode/agent/nvme/doorbell_case.hpp"
#include "p2pnode/agent/nvme/identify.hpp"
#include "p2pnode/agent/nvme/queue.hpp"
#include "unit/temp_dir.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

using namespace p2pnode::agent::nvme;

TEST(AgentNvmeQueue, IdentifyControllerCommand) {
  const auto e = identify_controller(0x0D0B, 0x1'2345'6000ULL);
  EXPECT_EQ(e.opcode(), 0x06);
  EXPECT_EQ(e.cid(), 0x0D0B);
  EXPECT_EQ(e.nsid(), 0U);
  EXPECT_EQ(e.prp1(), 0x1'2345'6000ULL);
  EXPECT_EQ(e.prp2(), 0U);
  EXPECT_EQ(e.cdw10(), 1U);  // CNS 01h
  std::array<std::uint8_t, 64> b{};
  e.store(b);
  // Little-endian on the wire: opcode in byte 0, CID in bytes 2..3, PRP1 at 24, CDW10 at 40.
  EXPECT_EQ(b[0], 0x06);
  EXPECT_EQ(b[1], 0x00);  // FUSE 0, PSDT 0: PRPs
  EXPECT_EQ(b[2], 0x0B);
  EXPECT_EQ(b[3], 0x0D);
  EXPECT_EQ(b[24], 0x00);
  EXPECT_EQ(b[25], 0x60);
  EXPECT_EQ(b[26], 0x45);
  EXPECT_EQ(b[27], 0x23);
  EXPECT_EQ(b[28], 0x01);
  EXPECT_EQ(b[40], 0x01);
  for (std::size_t i = 32; i < 40; ++i) { EXPECT_EQ(b[i], 0) << "PRP2 byte " << i; }
}

TEST(AgentNvmeQueue, CompletionDecoding) {
  // DW2: SQ head 1, SQ id 0; DW3: CID 0x0D0B, status 0, phase 1.
  const std::array<std::uint8_t, 16> ok{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x0B, 0x0D, 0x01, 0x00};
  const auto c = decode_completion(ok);
  EXPECT_TRUE(c.phase());
  EXPECT_TRUE(c.success());
  EXPECT_EQ(c.cid, 0x0D0B);
  EXPECT_EQ(c.sq_head, 1);
  EXPECT_EQ(c.status_text(), "success");
  // Invalid field in command (SC 02h), DNR, phase 0.
  const std::uint16_t sp = (1U << 15) | (0x02U << 1);
  std::array<std::uint8_t, 16> bad{};
  bad[14] = static_cast<std::uint8_t>(sp & 0xFF);
  bad[15] = static_cast<std::uint8_t>(sp >> 8);
  const auto d = decode_completion(bad);
  EXPECT_FALSE(d.phase());
  EXPECT_FALSE(d.success());
  EXPECT_TRUE(d.dnr());
  EXPECT_EQ(d.sc(), 2);
  EXPECT_EQ(d.sct(), 0);
  EXPECT_EQ(d.status_text(), "SCT 0 SC 0x02 (invalid field in command), do not retry");
}

TEST(AgentNvmeQueue, PhasePollingWrapsAndFlips) {
  // A 2-entry CQ: zeroed memory is "old" (phase 0); the controller posts with phase 1 until it
  // wraps, then with phase 0.
  std::vector<std::uint8_t> cq(2 * kCqEntryBytes, 0);
  CompletionPoller p(2);
  EXPECT_FALSE(p.peek(cq).has_value());
  cq[14] = 0x01;  // entry 0, phase 1
  ASSERT_TRUE(p.peek(cq).has_value());
  EXPECT_EQ(p.advance(), 1);
  EXPECT_FALSE(p.peek(cq).has_value());  // entry 1 still phase 0
  cq[16 + 14] = 0x01;
  ASSERT_TRUE(p.peek(cq).has_value());
  EXPECT_EQ(p.advance(), 0);  // wrapped
  EXPECT_FALSE(p.expected_phase());
  EXPECT_FALSE(p.peek(cq).has_value());  // entry 0 still has last round's phase 1
  cq[14] = 0x00;                         // posted again with phase 0
  EXPECT_TRUE(p.peek(cq).has_value());
  // A CQ buffer shorter than the head entry is never read past.
  CompletionPoller q(4);
  q.advance();
  q.advance();
  EXPECT_FALSE(q.peek(cq).has_value());
}

TEST(AgentNvmeQueue, LayoutChecks) {
  AdminLayout l;
  EXPECT_EQ(check_layout(l, 1024), "");
  EXPECT_NE(check_layout(l, 1).find("CAP.MQES"), std::string::npos);
  AdminLayout o = l;
  o.cq_offset = 0;
  EXPECT_NE(check_layout(o, 1024).find("overlap"), std::string::npos);
  AdminLayout m = l;
  m.identify_offset = 8200;
  EXPECT_NE(check_layout(m, 1024).find("aligned"), std::string::npos);
  AdminLayout s = l;
  s.total_bytes = 8192;
  EXPECT_NE(check_layout(s, 1024).find("smaller"), std::string::npos);
  AdminLayout one = l;
  one.sq_entries = 1;
  EXPECT_NE(check_layout(one, 1024).find("at least 2"), std::string::npos);
}

TEST(AgentNvmeIdentify, ParsesSerialModelFirmware) {
  std::vector<std::uint8_t> d(kIdentifyBytes, 0);
  d[0] = 0x36, d[1] = 0x1b;  // QEMU's vendor id 1b36
  std::memset(d.data() + 4, ' ', 60);
  std::memcpy(d.data() + 4, "21165N801234", 12);
  std::memcpy(d.data() + 24, "WDC PC SN530 SDBPNPZ-1T00-1002", 30);
  std::memcpy(d.data() + 64, "21160001", 8);
  d[77] = 5;
  d[80] = 0x00, d[81] = 0x04, d[82] = 0x01;  // VER 1.4.0
  const auto id = parse_identify_controller(d);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->vid, 0x1b36);
  EXPECT_EQ(id->serial, "21165N801234");
  EXPECT_EQ(id->model, "WDC PC SN530 SDBPNPZ-1T00-1002");
  EXPECT_EQ(id->firmware, "21160001");
  EXPECT_EQ(id->mdts, 5);
  EXPECT_EQ(id->ver, 0x00010400U);
  EXPECT_FALSE(parse_identify_controller(std::vector<std::uint8_t>(4095)).has_value());
}

TEST(AgentNvmeIdentify, TextFieldsAreSanitised) {
  const std::uint8_t poison[4] = {0xA5, 0xA5, 'x', 0};
  EXPECT_EQ(identify_text(poison), "??x");
  EXPECT_EQ(trim_blanks("  S5GXNF0R123456   \n"), "S5GXNF0R123456");
  EXPECT_EQ(trim_blanks("   "), "");
}

TEST(AgentNvmeCase, DriveSpecs) {
  std::string err;
  const auto d = parse_drive_spec(
      "bdf=0000:0b:00.0,serial=21165N801234,model=WDC PC SN530 SDBPNPZ-1T00-1002,gpu=0000:0a:00.0", err);
  ASSERT_TRUE(d.has_value()) << err;
  EXPECT_EQ(d->bdf, "0000:0b:00.0");
  EXPECT_EQ(d->serial, "21165N801234");
  EXPECT_EQ(d->model, "WDC PC SN530 SDBPNPZ-1T00-1002");
  EXPECT_EQ(d->pair_gpu, "0000:0a:00.0");
  EXPECT_FALSE(parse_drive_spec("bdf=0000:0b:00.0", err).has_value());
  EXPECT_NE(err.find("serial= is required"), std::string::npos);
  EXPECT_FALSE(parse_drive_spec("bdf=0b:00.0,serial=X", err).has_value());
  EXPECT_NE(err.find("like 0000:0b:00.0"), std::string::npos);
  EXPECT_FALSE(parse_drive_spec("bdf=0000:0b:00.0,serial=X,colour=red", err).has_value());
  EXPECT_NE(err.find("unknown key 'colour'"), std::string::npos);
  EXPECT_FALSE(parse_drive_spec("bdf=0000:0b:00.0,serial=X,gpu=GPU0", err).has_value());
  EXPECT_FALSE(parse_drive_spec("0000:0b:00.0", err).has_value());
  EXPECT_NE(err.find("not key=value"), std::string::npos);
  EXPECT_EQ(parse_writers("both"), (std::vector<Writer>{Writer::gpu, Writer::host}));  // GPU first
  EXPECT_FALSE(parse_writers("cpu").has_value());
}

TEST(AgentNvmeCase, DiscoveryFromSysfsAndRememberedSerials) {
  namespace fs = std::filesystem;
  const p2pnode::test::TempDir scratch("nvme-disc");
  const fs::path root = scratch.path();
  auto dev = [&](const std::string& bdf, const std::string& cls, const std::string& driver) {
    const fs::path d = root / "sys/bus/pci/devices" / bdf;
    fs::create_directories(d);
    std::ofstream(d / "class") << cls << "\n";
    if (!driver.empty()) {
      fs::create_directories(root / "sys/bus/pci/drivers" / driver);
      fs::create_directory_symlink(root / "sys/bus/pci/drivers" / driver, d / "driver");
    }
  };
  dev("0000:87:00.0", "0x010802", "vfio-pci");  // remembered
  dev("0000:88:00.0", "0x010802", "vfio-pci");  // not remembered
  dev("0000:42:00.0", "0x010802", "nvme");      // on nvme: never a target
  dev("0000:83:00.0", "0x030000", "vfio-pci");  // a GPU on vfio-pci: not NVMe
  fs::create_directories(root / "var");
  std::ofstream(root / "var/nvme-serials.json")
      << R"({"schema_version": 1, "drives": [{"serial": "S64F", "model": "PM9A3", "address": "0000:87:00.0"}]})";
  const auto disc = discover_vfio_drives((root / "sys").string(), (root / "var/nvme-serials.json").string());
  ASSERT_EQ(disc.drives.size(), 1u);
  EXPECT_EQ(disc.drives[0].bdf, "0000:87:00.0");
  EXPECT_EQ(disc.drives[0].serial, "S64F");
  EXPECT_EQ(disc.drives[0].model, "PM9A3");
  ASSERT_EQ(disc.unknown.size(), 1u);
  EXPECT_NE(disc.unknown[0].find("0000:88:00.0 is on vfio-pci but"), std::string::npos);
  // Nothing on vfio-pci: the case is waived with the reason, and nothing is opened.
  fs::remove_all(root / "sys/bus/pci/devices/0000:87:00.0");
  fs::remove_all(root / "sys/bus/pci/devices/0000:88:00.0");
  CaseEnv env;
  env.sysfs = (root / "sys").string();
  env.serials_json = (root / "var/nvme-serials.json").string();
  int factories = 0;
  const auto cr = run_doorbell_case(
      {}, {Writer::host},
      [&](Writer) -> WriterFactory {
        ++factories;
        return nullptr;
      },
      env);
  EXPECT_EQ(cr.status, p2pnode::agent::Status::waived);
  EXPECT_NE(cr.reason.find("no NVMe drive is bound to vfio-pci"), std::string::npos);
  EXPECT_EQ(factories, 0);
  // A named drive that is on nvme: waived, never opened.
  const auto named = run_doorbell_case(
      {{"0000:42:00.0", "S", "", ""}}, {Writer::host},
      [&](Writer) -> WriterFactory {
        return [&](VfioNvme&, const DriveSpec&, std::string&) -> std::unique_ptr<DoorbellWriter> {
          ++factories;
          return nullptr;
        };
      },
      env);
  ASSERT_EQ(named.cells.size(), 1u);
  EXPECT_EQ(named.cells[0].status, p2pnode::agent::Status::waived);
  EXPECT_NE(named.cells[0].reason.find("0000:42:00.0 is on nvme, not vfio-pci: not touched"), std::string::npos);
  EXPECT_EQ(factories, 0);
}
