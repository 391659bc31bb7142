#pragma once
// Xid events: the NVIDIA driver's error reports in the kernel log
// ("NVRM: Xid (PCI:0000:2b:00): 79, pid=…, GPU has fallen off the bus."), parsed from /dev/kmsg
// records or plain log lines, and named from a table of the Xids that matter to P2P.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.hpp"

namespace p2pnode::health {

// What one Xid means, in our words after NVIDIA's Xid catalog
// (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, "Analyzing Xid Errors
// with the Xid Catalog", Ampere and newer; the catalog's mnemonic is kept for a search there).
struct XidInfo {
  int xid = 0;
  const char* mnemonic;  // the catalog's name, or "" where it gives none we rely on
  const char* summary;   // what happened, one line
  const char* area;      // bus, nvlink, memory, gsp, engine
  Severity severity;     // error: the GPU or its links cannot be trusted for P2P until acted on
  const char* action;    // what an operator does
};
const std::vector<XidInfo>& xid_table();
const XidInfo* find_xid(int xid);  // nullptr: not in the table (still reported, as a warning)

struct XidEvent {
  std::string bdf;  // 0000:2b:00.0 (the driver logs bus and device; function 0)
  int xid = 0;
  std::optional<long> pid;             // pid=1896; absent or '<unknown>' in some lines
  std::string process;                 // name=python3, when logged
  std::string message;                 // the text after "NN, " (pid and name kept out)
  std::optional<std::uint64_t> seq;    // /dev/kmsg sequence number
  std::optional<std::uint64_t> ts_us;  // kernel timestamp, microseconds since boot
};

// "0000:2b:00" or "0000:2b:00.0" or "00000000:2B:00.0" (domain 4 or 8 hex digits) -> "0000:2b:00.0";
// nullopt when it is not a PCI address.
std::optional<std::string> bus_id(std::string_view s);

// One log line that carries an NVRM Xid: a /dev/kmsg record ("6,1234,5678,-;NVRM: Xid …"),
// a dmesg line ("[ 269.517039] NVRM: Xid …") or a journal line. nullopt: not an Xid line, or not
// the kernel's (kernel_text): the message must start with "NVRM: Xid (", where the driver puts it.
std::optional<XidEvent> parse_xid_line(std::string_view line);

// A /dev/kmsg record's prefix: "PRI,SEQ,TS_US,FLAGS[,…];MESSAGE" (Documentation/ABI/testing/dev-kmsg).
struct KmsgRecord {
  int priority = 0;  // facility * 8 + level (syslog's encoding)
  std::uint64_t seq = 0, ts_us = 0;
  std::string_view message;  // up to the first newline (continuation "KEY=value" lines dropped)
  int facility() const { return priority >> 3; }
};
std::optional<KmsgRecord> parse_kmsg_record(std::string_view record);

// The text of one log record as the kernel wrote it, from its start, or nullopt where it is not
// the kernel's. A /dev/kmsg record counts only with facility 0 (kernel): what a process writes to
// /dev/kmsg gets another ("user" unless it names one; printk refuses it the kernel's), and is
// nobody's word here. A dmesg line loses its "[ 1843.308145] " (or "[Fri Aug 30 11:43:09 2024] "),
// a journal line its "May 18 19:02:39 host kernel: ". What is left starts where the kernel or the
// driver began the message: a pattern anchored there cannot be matched by text that a user chose
// and the kernel quoted further on (a segfault report's file name, a process name).
struct KernelText {
  std::string_view text;  // a /dev/kmsg record's up to its first newline (newlines inside escaped "\x0a")
  std::optional<std::uint64_t> seq, ts_us;
};
std::optional<KernelText> kernel_text(std::string_view line);

}  // namespace p2pnode::health
