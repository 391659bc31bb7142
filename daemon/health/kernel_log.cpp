#include "health/kernel_log.hpp"

#include <regex>

#include "health/xid.hpp"

namespace p2pnode::health {

namespace {
// What the kernel prints before the message: dmesg's "[ 1843.308145] ", the journal's
// "Feb 14 05:03:41 host kernel: ", continuation indentation.
std::string_view strip(std::string_view s) {
  if (const auto k = s.find("kernel: "); k != std::string_view::npos && k < 64) s.remove_prefix(k + 8);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  if (!s.empty() && s.front() == '[') {
    const auto close = s.find("] ");
    if (close != std::string_view::npos && close < 20) s.remove_prefix(close + 2);
  }
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  return s;
}

// /dev/kmsg escapes a newline inside a record as "\x0a": split on both.
std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text.substr(i, 4) == "\\x0a") {
      out.push_back(cur);
      cur.clear();
      if (text[i] != '\n') i += 3;
      continue;
    }
    cur += text[i];
  }
  out.push_back(cur);
  return out;
}

const std::regex& gpu_head() {  // "NVRM: The NVIDIA GPU 0000:b3:00.0"
  static const std::regex r(R"(NVRM: The NVIDIA GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]))");
  return r;
}
const std::regex& pci_id() {  // "NVRM: (PCI ID: 10de:26b5) installed in this system has"
  static const std::regex r(R"(\(PCI ID: ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{4})\))");
  return r;
}
const std::regex& older_form() {  // "NVRM: GPU at 0000:01:00.0 has fallen off the bus."
  static const std::regex r(R"(NVRM: GPU at (?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?) has fallen off the bus)");
  return r;
}
// "nvidia 0000:01:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)"
const std::regex& bus_error() {
  static const std::regex r(
      R"(([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): PCIe Bus Error: severity=([^,]+), (type=.*))");
  return r;
}
std::string aer_class(const std::string& severity) {
  if (severity.find("Fatal") != std::string::npos && severity.find("Non-Fatal") == std::string::npos) return "fatal";
  if (severity.find("Non-Fatal") != std::string::npos) return "nonfatal";
  return "correctable";  // "Corrected" (before 6.x) or "Correctable"
}
}  // namespace

std::optional<KernelEvent> KernelLogParser::feed(std::string_view raw) {
  std::optional<std::uint64_t> seq, ts;
  std::string_view text = raw;
  if (auto rec = parse_kmsg_record(raw)) {
    seq = rec->seq;
    ts = rec->ts_us;
    text = raw.substr(raw.find(';') + 1);  // the whole text: parse_kmsg_record's message stops at "\n"
    if (const auto nl = text.find('\n'); nl != std::string_view::npos) text = text.substr(0, nl);  // KEY=value lines
  }
  std::optional<KernelEvent> done;
  for (const auto& l : lines_of(text)) {
    const std::string line(strip(l));
    if (line.empty()) continue;
    std::smatch m;
    if (std::regex_search(line, m, gpu_head())) {
      KernelEvent ev;
      ev.kind = "fallen_off_bus";
      ev.bdf = bus_id(m[1].str()).value_or(m[1].str());
      ev.message = line;
      ev.seq = seq;
      ev.ts_us = ts;
      pending_ = ev;
      pending_lines_ = 1;
      continue;
    }
    if (pending_) {
      pending_->message += " / " + line;
      if (std::regex_search(line, m, pci_id())) pending_->detail = "PCI ID " + m[1].str();
      if (line.find("fallen off the bus") != std::string::npos) {
        done = pending_;
        pending_.reset();
        continue;
      }
      if (++pending_lines_ > 3) pending_.reset();  // not the report we took it for
      continue;
    }
    if (std::regex_search(line, m, older_form())) {
      KernelEvent ev;
      ev.kind = "fallen_off_bus";
      ev.bdf = bus_id(m[1].str()).value_or(m[1].str());
      ev.message = line;
      ev.seq = seq;
      ev.ts_us = ts;
      done = ev;
      continue;
    }
    if (std::regex_search(line, m, bus_error())) {
      KernelEvent ev;
      ev.kind = "aer";
      ev.bdf = bus_id(m[1].str()).value_or(m[1].str());
      ev.aer_class = aer_class(m[2].str());
      ev.detail = m[3].str();
      ev.message = line;
      ev.seq = seq;
      ev.ts_us = ts;
      done = ev;
    }
  }
  return done;
}

}  // namespace p2pnode::health
