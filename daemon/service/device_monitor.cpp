#include "service/device_monitor.hpp"

#include <systemd/sd-device.h>
#include <systemd/sd-event.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

namespace p2pnode::service {

bool pci_event_matters(std::string_view bdf, std::string_view pci_class, const engine::RecordedState& state) {
  // PCI_CLASS is hex without 0x: 030000 VGA, 030200 3D controller, 010802 NVMe.
  if (pci_class.rfind("300", 0) == 0 || pci_class.rfind("302", 0) == 0 || pci_class.rfind("10802", 0) == 0 ||
      pci_class.rfind("0300", 0) == 0 || pci_class.rfind("0302", 0) == 0 || pci_class.rfind("010802", 0) == 0) {
    return true;
  }
  for (const char* kind : {"gpus", "nvme"}) {
    for (const auto& d : state.devices.value(kind, nlohmann::json::array())) {
      if (d.value("bdf", "") == bdf) { return true; }
    }
  }
  return false;
}

std::optional<std::string> reconcile_reason(const DeviceEvent& e, const engine::RecordedState& state) {
  if (e.bdf.empty() || !pci_event_matters(e.bdf, e.pci_class, state)) { return std::nullopt; }
  if (e.subsystem == "pci") {
    if (e.action == "add") { return "PCI device " + e.bdf + " added"; }
    if (e.action == "remove") { return "PCI device " + e.bdf + " removed"; }
    if (e.action == "bind") {
      return "PCI device " + e.bdf + " bound to " + (e.driver.empty() ? "a driver" : e.driver);
    }
    if (e.action == "unbind") { return "PCI device " + e.bdf + " unbound from its driver"; }
    return std::nullopt;
  }
  if (e.subsystem == "nvme" && e.action == "change" && e.nvme_event == "connected") {
    return "NVMe controller " + e.name + " on " + e.bdf + " connected";
  }
  return std::nullopt;
}

namespace {
std::string action_of(sd_device* dev) {
  sd_device_action_t a{};
  if (sd_device_get_action(dev, &a) < 0) { return ""; }
  switch (a) {
    case SD_DEVICE_ADD: return "add";
    case SD_DEVICE_REMOVE: return "remove";
    case SD_DEVICE_CHANGE: return "change";
    case SD_DEVICE_BIND: return "bind";
    case SD_DEVICE_UNBIND: return "unbind";
    default: return "other";
  }
}
std::string property(sd_device* dev, const char* key) {
  const char* v = nullptr;
  return sd_device_get_property_value(dev, key, &v) >= 0 && v ? v : "";
}
std::string subsystem_of(sd_device* dev) {
  const char* v = nullptr;
  return sd_device_get_subsystem(dev, &v) >= 0 && v ? v : "";
}
std::string sysname_of(sd_device* dev) {
  const char* v = nullptr;
  return sd_device_get_sysname(dev, &v) >= 0 && v ? v : "";
}
}  // namespace

struct DeviceMonitor::Impl {
  engine::Engine& engine;
  engine::LogFn log;
  sd_event* event = nullptr;
  sd_device_monitor* monitor = nullptr;
  int stop_fd = -1;
  std::thread thread;

  Impl(engine::Engine& e, engine::LogFn l) : engine(e), log(std::move(l)) {}

  static int on_device(sd_device_monitor*, sd_device* dev, void* userdata) {
    auto* self = static_cast<Impl*>(userdata);
    DeviceEvent e;
    e.subsystem = subsystem_of(dev);
    e.action = action_of(dev);
    e.name = sysname_of(dev);
    if (e.subsystem == "pci") {
      e.bdf = e.name;
      e.pci_class = property(dev, "PCI_CLASS");
      e.driver = property(dev, "DRIVER");
    } else if (e.subsystem == "nvme") {
      e.nvme_event = property(dev, "NVME_EVENT");
      sd_device* parent = nullptr;  // owned by dev
      if (e.action == "change" && sd_device_get_parent_with_subsystem_devtype(dev, "pci", nullptr, &parent) >= 0) {
        e.bdf = sysname_of(parent);
        e.pci_class = property(parent, "PCI_CLASS");
      }
    }
    auto snap = self->engine.snapshot();
    const auto why = reconcile_reason(e, snap->state);
    if (!why) { return 0; }
    if (self->engine.request("device", false) == engine::RequestResult::ignored) {
      self->log({engine::LogLevel::warning,
                 *why + ": not reconciling: the last " + std::to_string(engine::DeviceLoopGuard::kMaxStreak) +
                     " reconciles started by PCI events each changed the box again (p2pnode may be answering its own "
                     "changes); POST /v1/reconcile, SIGHUP or the schedule reconcile and re-arm the monitor",
                 "", "monitor", e.bdf});
      return 0;
    }
    self->log({engine::LogLevel::notice, *why + ": reconciling", "", "monitor", e.bdf});
    return 0;
  }
  static int on_stop(sd_event_source*, int, uint32_t, void* userdata) {
    sd_event_exit(static_cast<Impl*>(userdata)->event, 0);
    return 0;
  }

  ~Impl() {
    if (monitor) { sd_device_monitor_unref(monitor); }
    if (event) { sd_event_unref(event); }
    if (stop_fd >= 0) { ::close(stop_fd); }
  }
};

DeviceMonitor::DeviceMonitor(engine::Engine& engine, engine::LogFn log)
    : impl_(std::make_unique<Impl>(engine, std::move(log))) {}

DeviceMonitor::~DeviceMonitor() { stop(); }

Status DeviceMonitor::start() {
  auto& m = *impl_;
  int r = sd_event_new(&m.event);
  if (r < 0) { return Error{std::string("sd_event_new: ") + std::strerror(-r), -r}; }
  r = sd_device_monitor_new(&m.monitor);
  if (r < 0) { return Error{std::string("sd_device_monitor_new: ") + std::strerror(-r), -r}; }
  for (const char* subsystem : {"pci", "nvme"}) {
    r = sd_device_monitor_filter_add_match_subsystem_devtype(m.monitor, subsystem, nullptr);
    if (r < 0) { return Error{std::string("filtering on ") + subsystem + ": " + std::strerror(-r), -r}; }
  }
  r = sd_device_monitor_attach_event(m.monitor, m.event);
  if (r < 0) { return Error{std::string("attaching the monitor: ") + std::strerror(-r), -r}; }
  r = sd_device_monitor_start(m.monitor, &Impl::on_device, &m);
  if (r < 0) { return Error{std::string("starting the monitor: ") + std::strerror(-r), -r}; }
  m.stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m.stop_fd < 0) { return Error{std::string("eventfd: ") + std::strerror(errno), errno}; }
  r = sd_event_add_io(m.event, nullptr, m.stop_fd, EPOLLIN, &Impl::on_stop, &m);
  if (r < 0) { return Error{std::string("sd_event_add_io: ") + std::strerror(-r), -r}; }
  m.thread = std::thread([&m] { sd_event_loop(m.event); });
  return Status::success();
}

void DeviceMonitor::stop() {
  if (!impl_ || !impl_->thread.joinable()) { return; }
  const std::uint64_t one = 1;
  if (::write(impl_->stop_fd, &one, sizeof one) < 0) {}
  impl_->thread.join();
}

}  // namespace p2pnode::service
