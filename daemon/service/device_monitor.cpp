#include "service/device_monitor.hpp"

#include <systemd/sd-device.h>
#include <systemd/sd-event.h>

#include <cerrno>
#include <cstring>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace p2pnode::service {

bool pci_event_matters(std::string_view bdf, std::string_view pci_class, const engine::RecordedState& state) {
  // PCI_CLASS is hex without 0x: 030000 VGA, 030200 3D controller, 010802 NVMe.
  if (pci_class.rfind("300", 0) == 0 || pci_class.rfind("302", 0) == 0 || pci_class.rfind("10802", 0) == 0 ||
      pci_class.rfind("0300", 0) == 0 || pci_class.rfind("0302", 0) == 0 || pci_class.rfind("010802", 0) == 0)
    return true;
  for (const char* kind : {"gpus", "nvme"})
    for (const auto& d : state.devices.value(kind, nlohmann::json::array()))
      if (d.value("bdf", "") == bdf) return true;
  return false;
}

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
    sd_device_action_t action{};
    if (sd_device_get_action(dev, &action) < 0) return 0;
    if (action != SD_DEVICE_ADD && action != SD_DEVICE_REMOVE) return 0;
    const char* sysname = nullptr;
    const char* cls = nullptr;
    sd_device_get_sysname(dev, &sysname);
    sd_device_get_property_value(dev, "PCI_CLASS", &cls);
    if (!sysname) return 0;
    auto snap = self->engine.snapshot();
    if (!pci_event_matters(sysname, cls ? cls : "", snap->state)) return 0;
    const std::string what = std::string(action == SD_DEVICE_ADD ? "added" : "removed");
    self->log({engine::LogLevel::notice, "PCI device " + std::string(sysname) + " " + what + ": reconciling", "",
               "monitor", sysname});
    self->engine.request("device", false);
    return 0;
  }
  static int on_stop(sd_event_source*, int, uint32_t, void* userdata) {
    sd_event_exit(static_cast<Impl*>(userdata)->event, 0);
    return 0;
  }

  ~Impl() {
    if (monitor) sd_device_monitor_unref(monitor);
    if (event) sd_event_unref(event);
    if (stop_fd >= 0) ::close(stop_fd);
  }
};

DeviceMonitor::DeviceMonitor(engine::Engine& engine, engine::LogFn log)
    : impl_(std::make_unique<Impl>(engine, std::move(log))) {}

DeviceMonitor::~DeviceMonitor() { stop(); }

Status DeviceMonitor::start() {
  auto& m = *impl_;
  int r = sd_event_new(&m.event);
  if (r < 0) return Error{std::string("sd_event_new: ") + std::strerror(-r), -r};
  r = sd_device_monitor_new(&m.monitor);
  if (r < 0) return Error{std::string("sd_device_monitor_new: ") + std::strerror(-r), -r};
  r = sd_device_monitor_filter_add_match_subsystem_devtype(m.monitor, "pci", nullptr);
  if (r < 0) return Error{std::string("filtering on pci: ") + std::strerror(-r), -r};
  r = sd_device_monitor_attach_event(m.monitor, m.event);
  if (r < 0) return Error{std::string("attaching the monitor: ") + std::strerror(-r), -r};
  r = sd_device_monitor_start(m.monitor, &Impl::on_device, &m);
  if (r < 0) return Error{std::string("starting the monitor: ") + std::strerror(-r), -r};
  m.stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m.stop_fd < 0) return Error{std::string("eventfd: ") + std::strerror(errno), errno};
  r = sd_event_add_io(m.event, nullptr, m.stop_fd, EPOLLIN, &Impl::on_stop, &m);
  if (r < 0) return Error{std::string("sd_event_add_io: ") + std::strerror(-r), -r};
  m.thread = std::thread([&m] { sd_event_loop(m.event); });
  return Status::success();
}

void DeviceMonitor::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  const std::uint64_t one = 1;
  if (::write(impl_->stop_fd, &one, sizeof one) < 0) {
  }
  impl_->thread.join();
}

}  // namespace p2pnode::service
