#pragma once
// PCI hotplug: an sd-device monitor (libsystemd, on its own sd-event loop thread) that asks the
// engine for a reconcile when a PCI device the profile is about (a GPU, an NVMe controller, or
// an address the profile names) is added, removed, bound to a driver or unbound — e.g. after a
// remove + rescan — and when an NVMe controller on such a device has connected (its identity is
// readable only then).
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "core/result.hpp"
#include "engine/engine.hpp"
#include "engine/log.hpp"

namespace p2pnode::service {

// Whether a PCI uevent concerns the node: its class is a display or NVMe controller, or its
// address is one the last recorded state lists (GPUs, NVMe) or the profile names.
bool pci_event_matters(std::string_view bdf, std::string_view pci_class, const engine::RecordedState& state);

// One uevent as udev passes it on, reduced to what the decision needs.
struct DeviceEvent {
  std::string subsystem;   // "pci" or "nvme"
  std::string action;      // add, remove, bind, unbind, change, ...
  std::string name;        // the device's sysname: the PCI address, or nvme0 for a controller
  std::string bdf;         // the PCI address: the device's own, or the PCI parent of an nvme controller
  std::string pci_class;   // PCI_CLASS (hex without 0x), empty when unknown
  std::string driver;      // DRIVER on a bind
  std::string nvme_event;  // NVME_EVENT on an nvme change (connected, rediscover)
};

// Why the event calls for a reconcile, as the log line says it ("removed", "bound to nvme", ...),
// or nullopt when it does not concern the node. The nvme driver reads a controller's serial after
// the PCI bind, so the bind alone is too early for a profile that names drives by serial: the
// controller's "connected" change comes once it is readable.
std::optional<std::string> reconcile_reason(const DeviceEvent& e, const engine::RecordedState& state);

class DeviceMonitor {
 public:
  DeviceMonitor(engine::Engine& engine, engine::LogFn log);
  ~DeviceMonitor();
  Status start();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace p2pnode::service
