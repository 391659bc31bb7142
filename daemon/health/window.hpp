#pragma once
// Rise detection over a sliding window: each pass records every counter; a counter "rose" when its
// newest value is above the one it had a window ago, at the rate rise / span (thresholds.hpp judges it). A value below
// the last one (the device was reset, the machine rebooted) starts that counter over, as Prometheus treats a counter
// reset.
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>

namespace p2pnode::health {

class CounterWindow {
 public:
  explicit CounterWindow(double window_s = 600) : window_s_(window_s) {}
  void set_window(double window_s) { window_s_ = window_s; }
  double window() const { return window_s_; }

  // t: seconds on a monotonic clock.
  void record(const std::string& key, double t, std::uint64_t value);
  // How much the counter rose between the newest sample at or before t - window (else the oldest
  // kept) and the newest sample. 0 with a single sample: a first reading proves no rise.
  std::uint64_t rise(const std::string& key) const;
  // The seconds between the two samples rise() compares (0 with fewer than two).
  double span(const std::string& key) const;
  // The newest value, when the key was ever recorded and is still kept.
  const std::uint64_t* latest(const std::string& key) const;
  // Drops counters not recorded for a whole window (a device that went away).
  void forget_stale(double now);
  std::size_t size() const { return samples_.size(); }

 private:
  double window_s_;
  std::map<std::string, std::deque<std::pair<double, std::uint64_t>>> samples_;
};

}  // namespace p2pnode::health
