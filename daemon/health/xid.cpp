#include "health/xid.hpp"

#include <cctype>
#include <charconv>

#include "core/text.hpp"

namespace p2pnode::health {

const std::vector<XidInfo>& xid_table() {
  static const std::vector<XidInfo> t = {
      {13, "ROBUST_CHANNEL_GR_EXCEPTION", "graphics engine exception (an SM fault, often the application's)", "engine",
       Severity::warning, "check the application; if it repeats on one GPU with several programs, run diagnostics"},
      {31, "ROBUST_CHANNEL_FAULT",
       "GPU memory page fault: a kernel or copy touched an address it had no mapping for "
       "(the signature of broken P2P mappings)",
       "engine", Severity::warning,
       "if it follows P2P copies, run `p2pnode selftest`; check the IOMMU and ACS settings"},
      {43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing: a channel was reset", "engine",
       Severity::warning, "usually the application's; if it repeats with several programs, run diagnostics"},
      {45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "preemptive cleanup after an earlier error", "engine",
       Severity::warning, "look for the Xid that came before it"},
      {48, "DBE", "double-bit ECC error in GPU memory", "memory", Severity::error,
       "drain the GPU and reset it; replace it if it repeats"},
      {62, "PMU_HALT_ERROR", "internal micro-controller halted", "gsp", Severity::error, "reset the GPU"},
      {63, "ROBUST_CHANNEL_ROW_REMAP_PENDING",
       "ECC page retirement or row remapping recorded; takes effect at the next GPU reset", "memory", Severity::warning,
       "reset the GPU when it is idle"},
      {64, "ROBUST_CHANNEL_ROW_REMAP_FAILURE", "ECC page retirement or row remapping failed", "memory", Severity::error,
       "drain the GPU; replace it"},
      {74, "NVLINK_ERROR", "NVLink error: a link between GPUs (or to an NVSwitch) reported a fault", "nvlink",
       Severity::error,
       "drain the GPUs on that link; check the link's error counters (p2pnode_nvlink_errors_total), reseat bridges or "
       "cables, reset the GPUs; replace if it repeats"},
      {79, "GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus: it stopped answering on PCIe", "bus",
       Severity::error,
       "drain the node; check power, seating, risers and the slot's AER counters; a reboot (or GPU reset) is needed"},
      {92, "EXCESSIVE_SBE_INTERRUPTS", "high single-bit ECC error rate", "memory", Severity::warning,
       "watch it; reset the GPU when idle"},
      {94, "ROBUST_CHANNEL_CONTAINED_ERROR", "contained ECC error: the application using the memory was stopped",
       "memory", Severity::warning, "restart the application; reset the GPU when idle to remap the row"},
      {95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "uncontained ECC error: every application on the GPU is affected",
       "memory", Severity::error, "drain the GPU and reset it"},
      {109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "context switch timeout", "engine", Severity::warning,
       "usually the application's; if it repeats, run diagnostics"},
      {119, "GSP_RPC_TIMEOUT", "the GPU System Processor did not answer a driver call in time", "gsp", Severity::error,
       "reset the GPU; update the driver if it repeats"},
      {120, "GSP_ERROR", "the GPU System Processor reported an error", "gsp", Severity::error,
       "reset the GPU; update the driver if it repeats"},
      {144, "NVLINK_SAW_ERROR", "NVLink error (SAW unit, NVLink 5)", "nvlink", Severity::error,
       "drain the GPUs on that link and follow the catalog's resolution"},
      {145, "NVLINK_RLW_ERROR", "NVLink error (RLW unit, NVLink 5)", "nvlink", Severity::error,
       "drain the GPUs on that link and follow the catalog's resolution"},
      {146, "NVLINK_TLW_ERROR", "NVLink error (TLW unit, NVLink 5)", "nvlink", Severity::error,
       "drain the GPUs on that link and follow the catalog's resolution"},
      {147, "NVLINK_TREX_ERROR", "NVLink error (TREX unit, NVLink 5)", "nvlink", Severity::error,
       "drain the GPUs on that link and follow the catalog's resolution"},
      {148, "NVLINK_NVLPW_CTRL_ERROR", "NVLink error (NVLPW unit, NVLink 5)", "nvlink", Severity::error,
       "drain the GPUs on that link and follow the catalog's resolution"},
      {149, "NVLINK_NETIR_ERROR", "NVLink error (NETIR unit, NVLink 5)", "nvlink", Severity::error,
       "drain the GPUs on that link and follow the catalog's resolution"},
      {150, "NVLINK_MSE_ERROR", "NVLink error (MSE unit, NVLink 5)", "nvlink", Severity::error,
       "drain the GPUs on that link and follow the catalog's resolution"},
      {154, "GPU_RECOVERY_ACTION_CHANGED", "the driver changed the GPU's recovery action (reset or reboot needed)",
       "gsp", Severity::error, "do what `nvidia-smi -q` names under Recovery Action"},
  };
  return t;
}

const XidInfo* find_xid(int xid) {
  for (const auto& i : xid_table()) {
    if (i.xid == xid) { return &i; }
  }
  return nullptr;
}

namespace {
bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
std::string lower(std::string_view s) {
  std::string o(s);
  for (auto& c : o) { c = static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
  return o;
}
template <typename T>
bool number(std::string_view s, T& v) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}
}  // namespace

std::optional<std::string> bus_id(std::string_view s) {
  const auto c1 = s.find(':');
  if (c1 == std::string_view::npos) { return std::nullopt; }
  const auto c2 = s.find(':', c1 + 1);
  if (c2 == std::string_view::npos) { return std::nullopt; }
  std::string_view dom = s.substr(0, c1), bus = s.substr(c1 + 1, c2 - c1 - 1), rest = s.substr(c2 + 1);
  std::string_view dev = rest.substr(0, rest.find('.'));
  std::string_view fn = rest.find('.') == std::string_view::npos ? "0" : rest.substr(rest.find('.') + 1);
  if (dom.size() == 8 && dom.substr(0, 4) == "0000") { dom.remove_prefix(4); }
  auto all_hex = [](std::string_view x) {
    for (char c : x) {
      if (!is_hex(c)) { return false; }
    }
    return !x.empty();
  };
  if (dom.size() != 4 || bus.size() != 2 || dev.size() != 2 || fn.size() != 1 || !all_hex(dom) || !all_hex(bus) ||
      !all_hex(dev) || !all_hex(fn)) {
    return std::nullopt;
  }
  return lower(dom) + ":" + lower(bus) + ":" + lower(dev) + "." + std::string(fn);
}

namespace {
std::string_view trim(std::string_view s) { return p2pnode::trim(s, " \t\r\n"); }
}  // namespace

std::optional<KmsgRecord> parse_kmsg_record(std::string_view record) {
  const auto semi = record.find(';');
  if (semi == std::string_view::npos) { return std::nullopt; }
  std::string_view head = record.substr(0, semi);
  std::string_view fields[4];
  int n = 0;
  while (n < 4) {
    const auto comma = head.find(',');
    fields[n++] = head.substr(0, comma);
    if (comma == std::string_view::npos) { break; }
    head.remove_prefix(comma + 1);
  }
  KmsgRecord r;
  if (n < 3 || !number(fields[0], r.priority) || !number(fields[1], r.seq) || !number(fields[2], r.ts_us)) {
    return std::nullopt;
  }
  std::string_view msg = record.substr(semi + 1);
  r.message = msg.substr(0, msg.find('\n'));
  return r;
}

namespace {
std::string_view skip_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) { s.remove_prefix(1); }
  return s;
}
// "May 18 19:02:39 host kernel: " or "2026-11-27T07:00:00+0000 host kernel: ": a few words without
// brackets before "kernel: " (a process's "comm[pid]: " has them).
std::string_view strip_journal(std::string_view s) {
  const auto k = s.find(" kernel: ");
  if (k == std::string_view::npos || k > 64) {
    if (s.rfind("kernel: ", 0) == 0) { s.remove_prefix(8); }
    return s;
  }
  const std::string_view head = s.substr(0, k);
  if (head.find_first_of("[]();") != std::string_view::npos) { return s; }
  int words = 1;
  for (const char c : head) { words += c == ' '; }
  if (words > 5) { return s; }
  return s.substr(k + 9);
}
// "[ 1843.308145] " or dmesg --ctime's "[Fri Aug 30 11:43:09 2024] ".
std::string_view strip_dmesg_time(std::string_view s) {
  if (s.empty() || s.front() != '[') { return s; }
  const auto close = s.find("] ");
  if (close == std::string_view::npos || close > 32) { return s; }
  for (const char c : s.substr(1, close - 1)) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '.' || c == ':')) { return s; }
  }
  return s.substr(close + 2);
}
}  // namespace

std::optional<KernelText> kernel_text(std::string_view line) {
  KernelText out;
  if (auto rec = parse_kmsg_record(line)) {
    if (rec->facility() != 0) { return std::nullopt; }
    out.seq = rec->seq;
    out.ts_us = rec->ts_us;
    out.text = rec->message;
    return out;
  }
  out.text = skip_blanks(strip_dmesg_time(skip_blanks(strip_journal(line))));
  return out;
}

std::optional<XidEvent> parse_xid_line(std::string_view raw) {
  XidEvent ev;
  const auto kt = kernel_text(raw);
  if (!kt) { return std::nullopt; }
  ev.seq = kt->seq;
  ev.ts_us = kt->ts_us;
  std::string_view line = kt->text;
  constexpr std::string_view kTag = "NVRM: Xid (";
  if (line.rfind(kTag, 0) != 0) {
    return std::nullopt;  // where the driver puts it, nowhere else
  }
  std::string_view rest = line.substr(kTag.size());
  const auto close = rest.find(')');
  if (close == std::string_view::npos) { return std::nullopt; }
  std::string_view id = rest.substr(0, close);
  if (id.rfind("PCI:", 0) == 0) { id.remove_prefix(4); }
  auto bdf = bus_id(id);
  if (!bdf) {
    return std::nullopt;  // "Xid (43, pid: …)" and other shapes the driver does not print
  }
  ev.bdf = *bdf;
  rest.remove_prefix(close + 1);
  if (rest.rfind(": ", 0) != 0) { return std::nullopt; }
  rest.remove_prefix(2);
  const auto comma = rest.find(',');
  if (!number(trim(rest.substr(0, comma)), ev.xid)) { return std::nullopt; }
  rest = comma == std::string_view::npos ? std::string_view() : trim(rest.substr(comma + 1));
  // Optional "pid=1234, " and "name=python3, " before the text.
  for (;;) {
    const auto c = rest.find(',');
    const std::string_view field = rest.substr(0, c);
    if (field.rfind("pid=", 0) == 0) {
      long pid = 0;
      if (number(field.substr(4), pid)) { ev.pid = pid; }
    } else if (field.rfind("name=", 0) == 0) {
      ev.process = std::string(field.substr(5));
    } else {
      break;
    }
    rest = c == std::string_view::npos ? std::string_view() : trim(rest.substr(c + 1));
  }
  ev.message = std::string(trim(rest));
  return ev;
}

}  // namespace p2pnode::health
