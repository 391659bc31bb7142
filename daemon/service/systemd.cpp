#include "service/systemd.hpp"

#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-daemon.h>
// Otherwise sd_journal_sendv is a macro that adds CODE_FILE/CODE_LINE/CODE_FUNC, which would
// name the logger's lambda on every entry.
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <vector>

namespace p2pnode::service {

namespace {
int priority(engine::LogLevel l) {
  switch (l) {
    case engine::LogLevel::debug: return LOG_DEBUG;
    case engine::LogLevel::info: return LOG_INFO;
    case engine::LogLevel::notice: return LOG_NOTICE;
    case engine::LogLevel::warning: return LOG_WARNING;
    case engine::LogLevel::error: return LOG_ERR;
  }
  return LOG_INFO;
}
const char* level_name(engine::LogLevel l) {
  static const char* names[] = {"debug", "info", "notice", "warning", "error"};
  return names[static_cast<int>(l)];
}
// STATUS= is one line; keep it short enough for `systemctl status`.
std::string one_line(std::string s) {
  for (auto& c : s) {
    if (c == '\n' || c == '\r') { c = ' '; }
  }
  if (s.size() > 400) { s = s.substr(0, 397) + "..."; }
  return s;
}
}  // namespace

void notify_ready(const std::string& status) { sd_notifyf(0, "READY=1\nSTATUS=%s", one_line(status).c_str()); }
void notify_status(const std::string& status) { sd_notifyf(0, "STATUS=%s", one_line(status).c_str()); }
void notify_reloading() { sd_notify(0, "RELOADING=1\nSTATUS=reloading the configuration"); }
void notify_watchdog() { sd_notify(0, "WATCHDOG=1"); }
void notify_stopping() { sd_notify(0, "STOPPING=1\nSTATUS=stopping"); }

std::optional<std::chrono::microseconds> watchdog_ping_interval() {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) { return std::chrono::microseconds(usec / 2); }
  return std::nullopt;
}

std::vector<std::string> journal_fields(const engine::LogEvent& e) {
  std::vector<std::string> f = {"MESSAGE=" + e.message, "PRIORITY=" + std::to_string(priority(e.level)),
                                "SYSLOG_IDENTIFIER=p2pnode"};
  if (!e.check.empty()) { f.push_back("CHECK=" + e.check); }
  if (!e.step.empty()) { f.push_back("STEP=" + e.step); }
  if (!e.device.empty()) { f.push_back("DEVICE=" + e.device); }
  return f;
}

bool stderr_is_journal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  if (!js) { return false; }
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) { return false; }
  struct stat st {};
  if (::fstat(2, &st) != 0) { return false; }
  return st.st_dev == dev && st.st_ino == ino;
}

engine::LogFn make_logger(bool verbose) {
  if (stderr_is_journal()) {
    return [verbose](const engine::LogEvent& e) {
      if (e.level == engine::LogLevel::debug && !verbose) { return; }
      // An iovec per field, so that empty ones can be left out (sd_journal_send takes a fixed list).
      const auto fields = journal_fields(e);
      std::vector<iovec> iov;
      for (const auto& f : fields) { iov.push_back({const_cast<char*>(f.data()), f.size()}); }
      sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
    };
  }
  auto mu = std::make_shared<std::mutex>();
  return [verbose, mu](const engine::LogEvent& e) {
    if (e.level == engine::LogLevel::debug && !verbose) { return; }
    std::string line = "p2pnode[" + std::string(level_name(e.level)) + "]";
    if (!e.step.empty()) { line += " " + e.step; }
    if (!e.check.empty()) { line += " " + e.check; }
    if (!e.device.empty()) { line += " " + e.device; }
    line += ": " + e.message + "\n";
    std::lock_guard lk(*mu);
    std::fputs(line.c_str(), stderr);
  };
}

}  // namespace p2pnode::service
