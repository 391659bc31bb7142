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
  std::string bdf;                    // 0000:2b:00.0 (the driver logs bus and device; function 0)
  int xid = 0;
  std::optional<long> pid;            // pid=1896; absent or '<unknown>' in some lines
  std::string process;                // name=python3, when logged
  std::string message;                // the text after "NN, " (pid and name kept out)
  std::optional<std::uint64_t> seq;   // /dev/kmsg sequence number
  std::optional<std::uint64_t> ts_us; // kernel timestamp, microseconds since boot
};

// "0000:2b:00" or "0000:2b:00.0" or "00000000:2B:00.0" (domain 4 or 8 hex digits) -> "0000:2b:00.0";
// nullopt when it is not a PCI address.
std::optional<std::string> bus_id(std::string_view s);

// One log line that carries an NVRM Xid: a /dev/kmsg record ("6,1234,5678,-;NVRM: Xid …"),
// a dmesg line ("[ 269.517039] NVRM: Xid …") or a journal line. nullopt: not an Xid line.
std::optional<XidEvent> parse_xid_line(std::string_view line);

// A /dev/kmsg record's prefix: "PRI,SEQ,TS_US,FLAGS[,…];MESSAGE" (Documentation/ABI/testing/dev-kmsg).
struct KmsgRecord {
  int priority = 0;
  std::uint64_t seq = 0, ts_us = 0;
  std::string_view message;  // up to the first newline (continuation "KEY=value" lines dropped)
};
std::optional<KmsgRecord> parse_kmsg_record(std::string_view record);

}  // namespace p2pnode::health
