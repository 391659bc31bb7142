#pragma once
// Kernel messages that are not Xids but say the same kind of thing: the NVIDIA driver's "fallen off
// the bus" report without an Xid number (570 and later print it over three lines), and the kernel's
// own AER reports ("PCIe Bus Error: severity=…") naming the device, for boxes whose sysfs has no
// aer_dev_* counters (firmware-first AER, virtualised config space). Pure: lines in, events out.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace p2pnode::health {

struct KernelEvent {
  std::string kind;       // "fallen_off_bus" or "aer"
  std::string bdf;        // the device the message names
  std::string aer_class;  // aer: correctable, nonfatal or fatal
  std::string detail;     // aer: "type=Physical Layer, (Receiver ID)"; fallen_off_bus: "PCI ID 10de:26b5"
  std::string message;    // the whole report, its lines joined with " / "
  std::optional<std::uint64_t> seq, ts_us;  // the record's (the first line's, for several)
};

// Reads one record or line at a time, in log order: a /dev/kmsg record (its text may hold the
// three lines as one record with the newlines escaped, "\x0a"), a dmesg line ("[ 1843.308145] …",
// continuation lines indented) or a journal line ("… kernel: …"). The three-line report may come
// as three records: the parser keeps the first until the third arrives (at most two records later).
// Only the kernel's own text counts (kernel_text in xid.hpp: facility 0 on /dev/kmsg), and every
// pattern is anchored where the driver or dev_printk begins the message.
class KernelLogParser {
 public:
  // A /dev/kmsg read returns at most 8 KiB (the kernel's CONSOLE_EXT_LOG_MAX); a longer record is
  // not the kernel's and is skipped unread, so no pattern ever runs over it.
  static constexpr std::size_t kMaxRecordBytes = 8192;
  std::optional<KernelEvent> feed(std::string_view line);
  // Records skipped for their size since the parser was made.
  std::size_t oversize_records() const { return oversize_; }

 private:
  std::size_t oversize_ = 0;
  std::optional<KernelEvent> pending_;  // "The NVIDIA GPU <bdf>" seen, its end not yet
  int pending_lines_ = 0;
};

}  // namespace p2pnode::health
