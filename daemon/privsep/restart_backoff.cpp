#include "privsep/restart_backoff.hpp"

#include <algorithm>

namespace p2pnode::privsep {

std::chrono::milliseconds RestartBackoff::after_exit(std::chrono::milliseconds uptime) {
  if (uptime >= kSteady) { next_ = kFirst; }
  return take();
}

std::chrono::milliseconds RestartBackoff::after_failed_start() { return take(); }

std::chrono::milliseconds RestartBackoff::take() {
  const auto wait = next_;
  next_ = std::min(next_ * 2, kMost);
  return wait;
}

}  // namespace p2pnode::privsep
