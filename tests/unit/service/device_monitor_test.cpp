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
