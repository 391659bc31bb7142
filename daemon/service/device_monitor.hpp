#pragma once
// PCI hotplug: an sd-device monitor (libsystemd, on its own sd-event loop thread) that asks the
// engine for a reconcile when a PCI device the profile is about (a GPU, an NVMe controller, or
// an address the profile names) is added or removed — e.g. after a remove + rescan.
#include <atomic>
#include <memory>
#include <thread>

#include "core/result.hpp"
#include "engine/engine.hpp"
#include "engine/log.hpp"

namespace p2pnode::service {

// Whether a PCI uevent concerns the node: its class is a display or NVMe controller, or its
// address is one the last recorded state lists (GPUs, NVMe) or the profile names.
bool pci_event_matters(std::string_view bdf, std::string_view pci_class, const engine::RecordedState& state);

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
