#include "probe/health_probe.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "health/agent_health.hpp"
#include "pci/sysfs_decode.hpp"

namespace p2pnode::probe {

using sys::join;

std::vector<health::DeviceReading> probe_device_health(const sys::SysRoot& root, const health::PathIndex& paths) {
  std::vector<health::DeviceReading> out;
  for (const auto& bdf : paths.devices) {
    health::DeviceReading d;
    d.bdf = bdf;
    d.kind = paths.kind.at(bdf);
    d.link_idles = paths.idle_links.count(bdf) > 0;
    const std::string dir = join("/sys/bus/pci/devices", bdf);
    if (!root.exists(dir)) {
      d.aer_absent = "the device is gone from /sys/bus/pci/devices";
      out.push_back(std::move(d));
      continue;
    }
    for (const auto sev : health::kAerSeverities) {
      const auto text = root.read_text(join(dir, health::aer_file_name(sev)), 64 * 1024);
      if (!text) {
        continue;  // no AER capability, or the kernel's AER driver does not own the port
      }
      auto counts = health::decode_aer_stats(*text);
      if (!counts) {
        d.aer_absent = std::string(health::aer_file_name(sev)) + ": " + counts.error().message;
        continue;
      }
      d.aer[health::to_string(sev)] = std::move(counts).value();
    }
    if (d.aer.empty() && d.aer_absent.empty()) {
      d.aer_absent = "no AER statistics in sysfs (no AER capability, or the firmware kept AER)";
    }
    auto attr = [&](const char* name) { return root.read_attr(join(dir, name)); };
    if (auto t = attr("current_link_speed")) { d.link.current_gts = pci::parse_link_speed(*t); }
    if (auto t = attr("max_link_speed")) { d.link.max_gts = pci::parse_link_speed(*t); }
    if (auto t = attr("current_link_width")) { d.link.current_width = pci::parse_int(*t); }
    if (auto t = attr("max_link_width")) { d.link.max_width = pci::parse_int(*t); }
    out.push_back(std::move(d));
  }
  return out;
}

KmsgReader::~KmsgReader() {
  if (fd_ >= 0) { ::close(fd_); }
}

health::XidReading KmsgReader::read_new() {
  health::XidReading r;
  r.source = path_;
  const std::size_t oversize_before = kernel_log_.oversize_records();
  if (auto up = root_.read_attr("/proc/uptime")) {
    try {
      r.uptime_s = std::stod(up->substr(0, up->find(' ')));
    } catch (const std::exception&) {}
  }
  const std::string host = root_.host_path(path_).string();
  if (fd_ < 0) {
    fd_ = ::open(host.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) {
      r.problem = "cannot open " + path_ + ": " + std::strerror(errno) + " (Xid events are not watched)";
      return r;
    }
    struct stat st {};
    regular_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  }
  if (regular_) { ::lseek(fd_, 0, SEEK_SET); }
  // /dev/kmsg returns one record per read(); a regular file returns whatever fits.
  std::string pending;
  char buf[8192];
  auto take = [&](std::string_view rec) {
    if (auto ev = health::parse_xid_line(rec)) {
      r.events.push_back(std::move(*ev));
    } else if (auto k = kernel_log_.feed(rec)) {
      r.kernel_events.push_back(std::move(*k));
    }
  };
  for (int guard = 0; guard < 100000; ++guard) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) { continue; }
      if (errno == EPIPE) {
        continue;  // records were overwritten before we read them; go on from the next
      }
      if (errno != EAGAIN) { r.problem = "reading " + path_ + ": " + std::strerror(errno); }
      break;
    }
    if (n == 0) { break; }
    if (!regular_) {
      take(std::string_view(buf, static_cast<std::size_t>(n)));
      continue;
    }
    pending.append(buf, static_cast<std::size_t>(n));
  }
  if (regular_) {
    std::size_t pos = 0;
    while (pos < pending.size()) {
      const std::size_t eol = std::min(pending.find('\n', pos), pending.size());
      take(std::string_view(pending).substr(pos, eol - pos));
      pos = eol + 1;
    }
  }
  r.oversize_records = kernel_log_.oversize_records() - oversize_before;
  if (r.oversize_records > 0 && r.problem.empty()) {
    r.problem = std::to_string(r.oversize_records) + " record(s) of " + path_ + " over " +
                std::to_string(health::KernelLogParser::kMaxRecordBytes) + " bytes skipped unread (not the kernel's)";
  }
  return r;
}

health::AgentReading probe_nvlink(sys::CommandRunner& runner, const std::string& agent_host_path,
                                  std::chrono::milliseconds time_limit, const std::atomic<bool>* cancel) {
  health::AgentReading r;
  std::error_code ec;
  if (!std::filesystem::exists(agent_host_path, ec)) {
    r.skipped = "no agent at " + agent_host_path + " (NVLink counters are read through it)";
    return r;
  }
  sys::Command c;
  c.argv = {agent_host_path, "--health", "--json"};
  c.timeout = time_limit;
  c.max_output_bytes = 1 << 20;
  c.cancel = cancel;
  const auto res = runner.run(c);
  if (!res.success()) {
    std::string err = res.err.substr(0, 300);
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) { err.pop_back(); }
    r.skipped = "`" + c.display() + "` " + res.describe() + (err.empty() ? "" : ": " + err);
    return r;
  }
  if (res.out_truncated) {
    r.skipped = "`" + c.display() + "` printed more than 1 MiB";
    return r;
  }
  auto doc = health::decode_agent_health(res.out);
  if (!doc) {
    r.skipped = doc.error().message;
    return r;
  }
  return std::move(doc).value();
}

}  // namespace p2pnode::probe
