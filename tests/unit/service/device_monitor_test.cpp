#include <gtest/gtest.h>

#include "service/device_monitor.hpp"

using p2pnode::engine::RecordedState;
using p2pnode::service::pci_event_matters;

TEST(DeviceMonitor, GpusAndNvmeMatterByClass) {
  RecordedState s;
  // udev's PCI_CLASS is hex without leading zeros.
  EXPECT_TRUE(pci_event_matters("0000:01:00.0", "30000", s));   // VGA controller
  EXPECT_TRUE(pci_event_matters("0000:01:00.0", "30200", s));   // 3D controller (H100, H200)
  EXPECT_TRUE(pci_event_matters("0000:0b:00.0", "10802", s));   // NVMe
  EXPECT_FALSE(pci_event_matters("0000:02:00.0", "20000", s));  // Ethernet
  EXPECT_FALSE(pci_event_matters("0000:00:01.1", "60400", s));  // a bridge
}

TEST(DeviceMonitor, KnownAddressesMatterWithoutAClass) {
  RecordedState s;
  s.devices = {{"gpus", {{{"bdf", "0000:41:00.0"}}}}, {"nvme", {{{"bdf", "0000:0b:00.0"}}}}};
  EXPECT_TRUE(pci_event_matters("0000:41:00.0", "", s));  // removed: no properties left
  EXPECT_TRUE(pci_event_matters("0000:0b:00.0", "", s));
  EXPECT_FALSE(pci_event_matters("0000:42:00.0", "", s));
}

using p2pnode::service::DeviceEvent;
using p2pnode::service::reconcile_reason;

// The events a real remove + rescan, unbind + bind of an emulated NVMe drive produced under
// udevd (tests/vm/test_serve_vm.sh), in their order.
TEST(DeviceMonitor, HotplugAndDriverChangesOfAnNvmeDriveReconcile) {
  RecordedState s;
  const std::string b = "0000:00:02.0";
  EXPECT_EQ(reconcile_reason({"pci", "unbind", b, b, "10802", "", ""}, s),
            "PCI device 0000:00:02.0 unbound from its driver");
  EXPECT_EQ(reconcile_reason({"pci", "remove", b, b, "10802", "", ""}, s), "PCI device 0000:00:02.0 removed");
  EXPECT_EQ(reconcile_reason({"pci", "add", b, b, "10802", "", ""}, s), "PCI device 0000:00:02.0 added");
  EXPECT_EQ(reconcile_reason({"pci", "bind", b, b, "10802", "nvme", ""}, s), "PCI device 0000:00:02.0 bound to nvme");
  // Only now can the serial be read: the nvme driver identifies the controller after the bind.
  EXPECT_EQ(reconcile_reason({"nvme", "change", "nvme0", b, "10802", "", "connected"}, s),
            "NVMe controller nvme0 on 0000:00:02.0 connected");
}

TEST(DeviceMonitor, OtherEventsDoNotReconcile) {
  RecordedState s;
  const std::string t = "0000:00:03.0";  // pci-testdev, class 00ff00
  EXPECT_FALSE(reconcile_reason({"pci", "remove", t, t, "FF00", "", ""}, s));
  EXPECT_FALSE(reconcile_reason({"pci", "add", t, t, "FF00", "", ""}, s));
  const std::string b = "0000:00:02.0";
  EXPECT_FALSE(reconcile_reason({"pci", "change", b, b, "10802", "", ""}, s));  // e.g. an AER report
  EXPECT_FALSE(reconcile_reason({"nvme", "add", "nvme0", "", "", "", ""}, s));  // the controller's own add: too early
  EXPECT_FALSE(reconcile_reason({"nvme", "change", "nvme0", b, "10802", "", ""}, s));       // an AEN, not a connect
  EXPECT_FALSE(reconcile_reason({"nvme", "change", "nvme1", "", "", "", "connected"}, s));  // NVMe-oF: no PCI parent
}
