#pragma once
// How long the daemon waits before it starts its HTTP process again: 100 ms after a death, doubling
// while deaths follow each other, at most 30 s; a process that served for a minute starts the count
// afresh. It never gives up: a daemon without its HTTP process still reconciles, and is reachable
// again as soon as a start succeeds. Pure: the caller measures the time.
#include <chrono>

namespace p2pnode::privsep {

class RestartBackoff {
 public:
  static constexpr std::chrono::milliseconds kFirst{100};
  static constexpr std::chrono::milliseconds kMost{30000};
  static constexpr std::chrono::milliseconds kSteady{60000};

  // The process served for `uptime` and ended: the wait before the next start.
  std::chrono::milliseconds after_exit(std::chrono::milliseconds uptime);
  // A start failed (no socketpair, no fork): the wait before the next try.
  std::chrono::milliseconds after_failed_start();

 private:
  std::chrono::milliseconds take();
  std::chrono::milliseconds next_ = kFirst;
};

}  // namespace p2pnode::privsep
