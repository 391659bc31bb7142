// libFuzzer target: any bytes as kernel-log records (split at newlines, as a recorded log is read)
// reach the Xid and kernel-report parsers without a crash, a hang or undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "health/kernel_log.hpp"
#include "health/xid.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  p2pnode::health::KernelLogParser parser;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const auto record = text.substr(0, nl);
    if (auto x = p2pnode::health::parse_xid_line(record)) { (void)x->xid; }
    if (auto k = parser.feed(record)) { (void)k->bdf; }
    if (nl == std::string_view::npos) { break; }
    text.remove_prefix(nl + 1);
  }
  return 0;
}
