#include "health/kernel_log.hpp"

#include <regex>

#include "health/xid.hpp"

namespace p2pnode::health {

namespace {
// /dev/kmsg escapes a newline inside a record as "\x0a": split on both.
std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text.substr(i, 4) == "\\x0a") {
      out.push_back(cur);
      cur.clear();
      if (text[i] != '\n') { i += 3; }
      continue;
    }
    cur += text[i];
  }
  out.push_back(cur);
  return out;
}

// Every pattern is anchored at the start of the kernel's text (kernel_text): the driver's "NVRM: "
// and dev_printk's "<driver> <device>: " are where the message begins, never inside it.
const std::regex& gpu_head() {  // "NVRM: The NVIDIA GPU 0000:b3:00.0"
  static const std::regex r(R"(^NVRM: The NVIDIA GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]))");
  return r;
}
const std::regex& pci_id() {  // "NVRM: (PCI ID: 10de:26b5) installed in this system has"
  static const std::regex r(R"(^NVRM: \(PCI ID: ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{4})\))");
  return r;
}
const std::regex& older_form() {  // "NVRM: GPU at 0000:01:00.0 has fallen off the bus."
  static const std::regex r(
      R"(^NVRM: GPU at (?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?) has fallen off the bus)");
  return r;
}
// "nvidia 0000:01:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)";
// kernels whose AER code prints through pci_printk with its "AER: " prefix put that before it.
const std::regex& bus_error() {
  static const std::regex r(
      R"(^[A-Za-z0-9_.-]+ ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): (?:AER: )?PCIe Bus Error: severity=([^,]+), (type=.*))");
  return r;
}
std::string aer_class(const std::string& severity) {
  if (severity.find("Fatal") != std::string::npos && severity.find("Non-Fatal") == std::string::npos) {
    return "fatal";
  }
  if (severity.find("Non-Fatal") != std::string::npos) { return "nonfatal"; }
  return "correctable";  // "Corrected" (before 6.x) or "Correctable"
}
// An event of `kind` about the device at `address`, as the record's first line names it.
KernelEvent kernel_event(const char* kind, const std::string& address, const std::string& line,
                         std::optional<std::uint64_t> seq, std::optional<std::uint64_t> ts) {
  KernelEvent ev;
  ev.kind = kind;
  ev.bdf = bus_id(address).value_or(address);
  ev.message = line;
  ev.seq = seq;
  ev.ts_us = ts;
  return ev;
}
}  // namespace

std::optional<KernelEvent> KernelLogParser::feed(std::string_view raw) {
  if (raw.size() > kMaxRecordBytes) {
    ++oversize_;
    return std::nullopt;
  }
  const auto kt = kernel_text(raw);
  if (!kt) {
    return std::nullopt;  // not the kernel's record: it neither starts nor ends a report
  }
  const std::optional<std::uint64_t> seq = kt->seq, ts = kt->ts_us;
  std::optional<KernelEvent> done;
  // Only a record's first line is where the kernel began it; a later line (after an escaped
  // newline) is the driver's only in a record that began with the driver's report, since text the
  // kernel quotes (a file name) may hold newlines of its own.
  bool first = true, driver_record = false;
  for (const auto& l : lines_of(kt->text)) {
    const bool anchored = first || driver_record;
    first = false;
    if (!anchored) { break; }
    std::string_view t = l;  // a dmesg continuation line is indented
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) { t.remove_prefix(1); }
    while (!t.empty() && (t.back() == '\r' || t.back() == '\n' || t.back() == ' ')) { t.remove_suffix(1); }
    const std::string line(t);
    if (line.empty()) { continue; }
    std::smatch m;
    if (std::regex_search(line, m, gpu_head())) {
      pending_ = kernel_event("fallen_off_bus", m[1].str(), line, seq, ts);
      pending_lines_ = 1;
      driver_record = true;
      continue;
    }
    if (pending_) {
      pending_->message += " / " + line;
      if (std::regex_search(line, m, pci_id())) { pending_->detail = "PCI ID " + m[1].str(); }
      if (line.rfind("NVRM: ", 0) == 0 && line.find("fallen off the bus") != std::string::npos) {
        done = pending_;
        pending_.reset();
        continue;
      }
      if (++pending_lines_ > 3) {
        pending_.reset();  // not the report we took it for
      }
      continue;
    }
    if (std::regex_search(line, m, older_form())) {
      done = kernel_event("fallen_off_bus", m[1].str(), line, seq, ts);
      continue;
    }
    if (std::regex_search(line, m, bus_error())) {
      KernelEvent ev = kernel_event("aer", m[1].str(), line, seq, ts);
      ev.aer_class = aer_class(m[2].str());
      ev.detail = m[3].str();
      done = ev;
    }
  }
  return done;
}

}  // namespace p2pnode::health
