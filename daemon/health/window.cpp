#include "health/window.hpp"

namespace p2pnode::health {

void CounterWindow::record(const std::string& key, double t, std::uint64_t value) {
  auto& d = samples_[key];
  if (!d.empty() && value < d.back().second) {
    d.clear();  // reset: what came before is another counter
  }
  d.emplace_back(t, value);
  // Keep one sample at or before the window's start as the baseline; drop the older ones.
  while (d.size() > 1 && d[1].first <= t - window_s_) { d.pop_front(); }
}

std::uint64_t CounterWindow::rise(const std::string& key) const {
  const auto it = samples_.find(key);
  if (it == samples_.end() || it->second.size() < 2) { return 0; }
  return it->second.back().second - it->second.front().second;
}

double CounterWindow::span(const std::string& key) const {
  const auto it = samples_.find(key);
  if (it == samples_.end() || it->second.size() < 2) { return 0; }
  return it->second.back().first - it->second.front().first;
}

const std::uint64_t* CounterWindow::latest(const std::string& key) const {
  const auto it = samples_.find(key);
  return it == samples_.end() || it->second.empty() ? nullptr : &it->second.back().second;
}

void CounterWindow::forget_stale(double now) {
  for (auto it = samples_.begin(); it != samples_.end();) {
    it = !it->second.empty() && it->second.back().first < now - window_s_ ? samples_.erase(it) : std::next(it);
  }
}

}  // namespace p2pnode::health
