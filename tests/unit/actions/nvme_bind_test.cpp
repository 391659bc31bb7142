// nvme.bind on a copy of the rtx3090-nvme fixture (seed 002's box: SN530 nvme1 at 0000:0b:00.0,
// PM capability at 0x80; boot drive nvme0 at 01:00.0 mounted, swap; IOMMU off). A recorded tree
// does not rebind on a write, so the kernel's half is proven in tests/vm/; here: what is refused,
// what is written and what is not.
#include "actions/nvme_bind.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "probe/nvme.hpp"
#include "probe/probe.hpp"
#include "unit/temp_dir.hpp"

namespace p2pnode::actions {
namespace {
namespace fs = std::filesystem;

constexpr const char* kSn530 = "0000:0b:00.0";
constexpr const char* kSn530Dir = "sys/devices/pci0000:00/0000:00:03.4/0000:0b:00.0";

class NvmeBindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_ / "root";
    fs::copy(fs::path(P2PNODE_SOURCE_DIR) / "tests/fixtures/rtx3090-nvme", dir_,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    root_ = std::make_unique<sys::SysRoot>(dir_);
  }

  static Profile profile(NvmeDrive d, bool noiommu = true) {
    Profile p;
    p.name = "test";
    p.nvme = NvmeSpec{noiommu, {std::move(d)}};
    return p;
  }
  static NvmeDrive serial(const std::string& s) {
    NvmeDrive d;
    d.serial = s;
    return d;
  }
  void write(const std::string& rel, const std::string& text) {
    std::ofstream(dir_ / rel, std::ios::binary | std::ios::trunc) << text;
  }
  std::string read(const std::string& rel) {
    std::ifstream in(dir_ / rel, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // The box after a good bind: vfio-pci, power on, D0, Memory+BusMaster, sane BAR0, serial remembered.
  void make_bound(std::uint16_t command = 0x0406, const std::string& control = "on", bool sane_bar0 = true) {
    const fs::path dev = dir_ / kSn530Dir;
    fs::remove(dev / "driver");
    fs::create_directories(dir_ / "sys/bus/pci/drivers/vfio-pci");
    fs::remove(dir_ / "sys/bus/pci/drivers/nvme" / kSn530);
    fs::create_directory_symlink("../../../../bus/pci/drivers/vfio-pci", dev / "driver");
    fs::remove_all(dev / "nvme");
    write(std::string(kSn530Dir) + "/power/control", control + "\n");
    write(std::string(kSn530Dir) + "/driver_override", "vfio-pci\n");
    std::fstream cfg(dev / "config", std::ios::in | std::ios::out | std::ios::binary);
    cfg.seekp(4);
    cfg.put(static_cast<char>(command & 0xFF)).put(static_cast<char>(command >> 8));
    cfg.close();
    std::string bar0(4096, sane_bar0 ? '\0' : '\xff');
    if (sane_bar0) {
      const unsigned char cap[8] = {0xff, 0x03, 0x03, 0x14, 0x20, 0, 0, 0};
      bar0.replace(0, 8, reinterpret_cast<const char*>(cap), 8);
      bar0[0x09] = 0x04, bar0[0x0A] = 0x01;  // VS 1.4.0
      bar0[0x1C] = 0x01;
    }
    write(std::string(kSn530Dir) + "/resource0", bar0);
    write(std::string(kSn530Dir) + "/remove", "");
    fs::create_directories(dir_ / "var/lib/p2pnode");
    write("var/lib/p2pnode/nvme-serials.json",
          probe::render_remembered_drives({{"21165N801234", "WDC PC SN530 SDBPNPZ-1T00-1002", kSn530}}));
  }
  NvmeBindTiming fast() const {
    return {std::chrono::milliseconds(30), std::chrono::milliseconds(5), std::chrono::milliseconds(1), 1};
  }

  std::vector<StepResult> apply(const Profile& p, sys::ScriptedRunner& runner) {
    ApplyContext ctx{*root_, runner, p};
    return make_nvme_bind(fast())->apply(ctx, probe::probe_inventory(*root_));
  }
  std::vector<Step> plan(const Profile& p) {
    return make_nvme_bind(fast())->plan(p, probe::probe_inventory(*root_), *root_);
  }

  p2pnode::test::TempDir tmp_{"nvme"};
  fs::path dir_;
  std::unique_ptr<sys::SysRoot> root_;
};

TEST_F(NvmeBindTest, PlanNamesOnlyTheProfilesDrive) {
  const auto steps = plan(profile(serial("21165N801234")));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].subject, kSn530);
  EXPECT_FALSE(steps[0].needs_operator);
  EXPECT_EQ(steps[0].description, "driver nvme -> vfio-pci (serial 21165N801234)");
  EXPECT_EQ(root_->write_count(), 0u);
}

TEST_F(NvmeBindTest, BootDriveIsRefusedWithEveryReasonAndNothingWritten) {
  sys::ScriptedRunner runner;
  const auto p = profile(serial("S69ENF0R954321K"));
  const auto steps = plan(p);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].needs_operator);
  const auto results = apply(p, runner);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::refused);
  EXPECT_EQ(results[0].subject, "0000:01:00.0");
  const std::string& m = results[0].message;
  EXPECT_NE(m.find("refusing to unbind 0000:01:00.0 (nvme0) from nvme"), std::string::npos) << m;
  EXPECT_NE(m.find("nvme0n1p2 is mounted at /"), std::string::npos) << m;
  EXPECT_NE(m.find("nvme0n1p1 is mounted at /boot/efi"), std::string::npos) << m;
  EXPECT_NE(m.find("nvme0n1p3 is in use as swap"), std::string::npos) << m;
  EXPECT_EQ(results[0].writes, 0u);
  EXPECT_EQ(root_->write_count(), 0u);
  EXPECT_TRUE(runner.calls().empty());
  EXPECT_EQ(fs::read_symlink(dir_ / "sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/driver").filename(), "nvme");
}

TEST_F(NvmeBindTest, IommuOffWithoutNoiommuIsRefusedBeforeAnyWrite) {
  sys::ScriptedRunner runner;
  const auto p = profile(serial("21165N801234"), /*noiommu=*/false);
  const auto steps = plan(p);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].needs_operator);
  const auto results = apply(p, runner);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::failed);
  EXPECT_NE(results[0].message.find("nvme.noiommu: true"), std::string::npos) << results[0].message;
  EXPECT_NE(results[0].message.find("nothing was unbound"), std::string::npos);
  EXPECT_EQ(root_->write_count(), 0u);
  EXPECT_TRUE(runner.calls().empty());
}

TEST_F(NvmeBindTest, KernelWithoutNoiommuIsNamedAndNothingUnbound) {
  fs::remove_all(dir_ / "sys/module/vfio");  // Debian: vfio loads, the parameter never appears
  sys::ScriptedRunner runner;
  runner.on({"modprobe"}, sys::exited_with(0));
  const auto results = apply(profile(serial("21165N801234")), runner);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::failed);
  EXPECT_NE(results[0].message.find("CONFIG_VFIO_NOIOMMU"), std::string::npos) << results[0].message;
  EXPECT_NE(results[0].message.find("enable_unsafe_noiommu_mode"), std::string::npos);
  ASSERT_EQ(runner.calls().size(), 1u);
  EXPECT_EQ(runner.calls()[0], (std::vector<std::string>{"modprobe", "vfio", "enable_unsafe_noiommu_mode=1"}));
  EXPECT_EQ(root_->write_count(), 0u);  // no override, no unbind
  EXPECT_EQ(read(std::string(kSn530Dir) + "/driver_override"), "(null)\n");
}

TEST_F(NvmeBindTest, NoiommuParameterIsSetBeforeTheBindAndABindThatDidNotHappenIsNotReported) {
  write("sys/module/vfio/parameters/enable_unsafe_noiommu_mode", "N\n");
  fs::create_directories(dir_ / "sys/bus/pci/drivers/vfio-pci");
  sys::ScriptedRunner runner;
  const auto results = apply(profile(serial("21165N801234")), runner);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::failed);
  // A recorded tree does not rebind: the driver link stays nvme, and apply says so.
  EXPECT_NE(results[0].message.find("no driver bound after drivers_probe (driver link: nvme)"), std::string::npos)
      << results[0].message;
  EXPECT_EQ(read("sys/module/vfio/parameters/enable_unsafe_noiommu_mode"), "1");
  EXPECT_EQ(read("sys/bus/pci/drivers/nvme/unbind"), kSn530);
  EXPECT_EQ(read("sys/bus/pci/drivers_probe"), kSn530);
  // The serial was remembered before the unbind (its nvme class entry disappears on vfio-pci).
  const auto remembered = probe::read_remembered_drives(*root_);
  ASSERT_EQ(remembered.size(), 1u);
  EXPECT_EQ(remembered[0].serial, "21165N801234");
  EXPECT_EQ(remembered[0].address, kSn530);
  EXPECT_TRUE(runner.calls().empty());  // vfio and vfio-pci already there
  EXPECT_GE(results[0].writes, 5u);
}

TEST_F(NvmeBindTest, BoundAndFixedIsANoOpFoundThroughTheRememberedSerial) {
  make_bound();
  EXPECT_TRUE(plan(profile(serial("21165N801234"))).empty());
  sys::ScriptedRunner runner;
  const auto results = apply(profile(serial("21165N801234")), runner);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::unchanged) << results[0].message;
  EXPECT_EQ(results[0].writes, 0u);
  EXPECT_EQ(root_->write_count(), 0u);
  EXPECT_EQ(results[0].after["bar0"]["version"], "1.4.0");
}

TEST_F(NvmeBindTest, FixupsWritePowerControlAndReadModifyWriteCommand) {
  make_bound(/*command=*/0x0401, /*control=*/"auto");
  const auto steps = plan(profile(serial("21165N801234")));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].description, "power/control auto -> on; COMMAND 0x0401 -> Memory+BusMaster (serial 21165N801234)");
  sys::ScriptedRunner runner;
  const auto results = apply(profile(serial("21165N801234")), runner);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::changed) << results[0].message;
  EXPECT_EQ(results[0].writes, 2u);
  EXPECT_EQ(read(std::string(kSn530Dir) + "/power/control"), "on");
  const std::string cfg = read(std::string(kSn530Dir) + "/config");
  EXPECT_EQ(static_cast<unsigned char>(cfg[4]), 0x07);  // IO kept, Memory+BusMaster added
  EXPECT_EQ(static_cast<unsigned char>(cfg[5]), 0x04);  // INTx disable kept
  EXPECT_EQ(results[0].after["command"], "0x0407");
}

TEST_F(NvmeBindTest, AllFsBar0TriesRemoveRescanBoundedAndReopensAutoprobe) {
  make_bound(0x0406, "on", /*sane_bar0=*/false);
  sys::ScriptedRunner runner;
  const auto results = apply(profile(serial("21165N801234")), runner);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::failed);
  EXPECT_NE(results[0].message.find("recovering 0000:0b:00.0 by remove+rescan"), std::string::npos)
      << results[0].message;
  EXPECT_EQ(read(std::string(kSn530Dir) + "/remove"), "1");
  EXPECT_EQ(read("sys/bus/pci/drivers_autoprobe"), "1");  // the window is closed again
}

// The boot race: the drive has no driver when apply reads it, and nvme's asynchronous probe
// takes it while vfio-pci loads. A small kernel beside the test does what drivers_probe does: bind
// the override's driver to a function that has none, nothing to one that has a driver.
class NvmeBindLateProbeTest : public NvmeBindTest {
 protected:
  void SetUp() override {
    NvmeBindTest::SetUp();
    fs::remove(dir_ / kSn530Dir / "driver");
    fs::remove(dir_ / "sys/bus/pci/drivers/nvme" / kSn530);
    write(std::string(kSn530Dir) + "/driver_override", "(null)\n");
    write("sys/module/vfio/parameters/enable_unsafe_noiommu_mode", "N\n");
    kernel_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        probe_once();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  void TearDown() override {
    kernel_ = {};
    NvmeBindTest::TearDown();
  }
  static NvmeDrive at_address() {
    NvmeDrive d;
    d.address = PciAddress::parse(kSn530);
    d.power_fixups = false;
    return d;
  }
  void link_to(const std::string& driver) {
    const fs::path link = dir_ / kSn530Dir / "driver";
    fs::remove(link);
    if (!driver.empty()) { fs::create_directory_symlink("../../../../bus/pci/drivers/" + driver, link); }
  }
  std::string linked() {
    std::error_code ec;
    const auto t = fs::read_symlink(dir_ / kSn530Dir / "driver", ec);
    return ec ? "" : t.filename().string();
  }
  // modprobe vfio-pci: the driver appears, and meanwhile nvme finishes probing the drive.
  void nvme_probes_while_vfio_loads(sys::ScriptedRunner& runner, const std::string& mount_line = "") {
    runner.on({"modprobe", "vfio-pci"}, [this, mount_line](const sys::Command&) {
      fs::create_directories(dir_ / "sys/bus/pci/drivers/vfio-pci");
      link_to("nvme");
      if (!mount_line.empty()) { std::ofstream(dir_ / "proc/mounts", std::ios::app) << mount_line; }
      return sys::exited_with(0);
    });
  }
  NvmeBindTiming patient() const {
    return {std::chrono::seconds(10), std::chrono::milliseconds(2), std::chrono::milliseconds(1), 1};
  }
  std::vector<StepResult> apply_patiently(const Profile& p, sys::ScriptedRunner& runner,
                                          std::vector<std::string>& log) {
    ApplyContext ctx{*root_, runner, p};
    ctx.log = [&log](std::string_view, std::string_view, std::string_view line) { log.emplace_back(line); };
    return make_nvme_bind(patient())->apply(ctx, probe::probe_inventory(*root_));
  }

  std::atomic<int> unbinds_{0};
  std::atomic<int> binds_{0};

 private:
  // unbind drops the link; drivers_probe binds the override's driver only to a driverless function.
  void probe_once() {
    if (read("sys/bus/pci/drivers/nvme/unbind") == kSn530) {
      write("sys/bus/pci/drivers/nvme/unbind", "");
      if (linked() == "nvme") { link_to(""), ++unbinds_; }
    }
    if (read("sys/bus/pci/drivers_probe") == kSn530) {
      write("sys/bus/pci/drivers_probe", "");
      std::string want = read(std::string(kSn530Dir) + "/driver_override");
      if (!want.empty() && want.back() == '\n') { want.pop_back(); }
      if (linked().empty() && want == "vfio-pci") { link_to("vfio-pci"), ++binds_; }
    }
  }
  std::jthread kernel_;
};

TEST_F(NvmeBindLateProbeTest, ADriveNvmeTookAfterItWasReadIsCheckedUnboundAndBound) {
  sys::ScriptedRunner runner;
  nvme_probes_while_vfio_loads(runner);
  std::vector<std::string> log;
  const auto results = apply_patiently(profile(at_address()), runner, log);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::changed) << results[0].message;
  EXPECT_EQ(results[0].before["driver"], "");
  EXPECT_EQ(results[0].after["driver"], "vfio-pci");
  EXPECT_EQ(linked(), "vfio-pci");
  EXPECT_EQ(unbinds_.load(), 1);
  EXPECT_EQ(binds_.load(), 1);
  bool said = false;
  for (const auto& l : log) {
    said = said || l.find("nvme took 0000:0b:00.0 after it was read; unbinding it") != std::string::npos;
  }
  EXPECT_TRUE(said) << "the log does not say nvme took the drive";
}

TEST_F(NvmeBindLateProbeTest, ADriveNvmeTookWithAMountedFilesystemIsRefusedAndLeftOnNvme) {
  sys::ScriptedRunner runner;
  nvme_probes_while_vfio_loads(runner, "/dev/nvme1n1 /data ext4 rw,relatime 0 0\n");
  std::vector<std::string> log;
  const auto results = apply_patiently(profile(at_address()), runner, log);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, StepOutcome::refused) << results[0].message;
  const std::string& m = results[0].message;
  EXPECT_NE(m.find("nvme took 0000:0b:00.0 after it was read, and refusing to unbind 0000:0b:00.0"), std::string::npos)
      << m;
  EXPECT_NE(m.find("nvme1n1 is mounted at /data"), std::string::npos) << m;
  EXPECT_EQ(linked(), "nvme");
  EXPECT_EQ(unbinds_.load(), 0);
  EXPECT_EQ(read("sys/bus/pci/drivers/nvme/unbind"), "");
  EXPECT_EQ(read(std::string(kSn530Dir) + "/driver_override"), "\n");  // the override is taken back
}

TEST_F(NvmeBindTest, UnknownDriveIsAProblemAndNothingElseIsTouched) {
  sys::ScriptedRunner runner;
  const auto results = apply(profile(serial("NOPE")), runner);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].subject, "profile");
  EXPECT_EQ(results[0].message, "no NVMe controller matches the drive with serial NOPE");
  EXPECT_EQ(root_->write_count(), 0u);
}

}  // namespace
}  // namespace p2pnode::actions
