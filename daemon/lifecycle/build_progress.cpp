#include "lifecycle/build_progress.hpp"

#include <cstdio>
#include <vector>

namespace p2pnode::lifecycle {
namespace {

std::vector<std::string_view> blank_separated(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) { ++i; }
    const auto start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') { ++i; }
    if (i > start) { out.push_back(line.substr(start, i - start)); }
  }
  return out;
}

std::string size_text(std::uintmax_t b) {
  char s[32];
  if (b >= (1u << 20)) {
    std::snprintf(s, sizeof s, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  } else if (b >= 1024) {
    std::snprintf(s, sizeof s, "%.0f KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(s, sizeof s, "%ju B", b);
  }
  return s;
}

}  // namespace

std::optional<std::string> compiling_now(std::string_view tail) {
  std::optional<std::string> found;
  std::size_t pos = 0;
  while (pos < tail.size()) {
    const auto nl = tail.find('\n', pos);
    auto line = tail.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    // NVIDIA's core Makefile prefixes its lines with the component: " [ nvidia            ]  CC  src/…".
    if (const auto open = line.find_first_not_of(" \t"); open != std::string_view::npos && line[open] == '[') {
      if (const auto close = line.find(']', open); close != std::string_view::npos) { line.remove_prefix(close + 1); }
    }
    const auto w = blank_separated(line);
    if (w.size() >= 2 && (w[0] == "CC" || w[0] == "CXX" || w[0] == "LD" || w[0] == "AR")) {
      const std::size_t i = (w[1] == "[M]" && w.size() >= 3) ? 2 : 1;
      if (i < w.size() && w[i].find('/') != std::string_view::npos) { found = std::string(w[i]); }
    }
    if (nl == std::string_view::npos) { break; }
    pos = nl + 1;
  }
  return found;
}

std::optional<std::string> BuildProgress::tick(double elapsed_s, std::optional<std::uintmax_t> size,
                                               std::string_view tail) {
  if (elapsed_s - last_s_ < interval_s_) { return std::nullopt; }
  last_s_ = elapsed_s;
  char head[64];
  std::snprintf(head, sizeof head, "still building after %.0f s", elapsed_s);
  std::string line = head;
  if (!size) {
    line += "; no " + log_name_ + " yet";
  } else {
    line += "; " + log_name_ + " " + size_text(*size);
    if (*size > last_size_) {
      line += " (+" + size_text(*size - last_size_) + ")";
    } else {
      line += " (no new output)";
    }
    last_size_ = *size;
    if (auto f = compiling_now(tail)) { line += ", at " + *f; }
  }
  return line;
}

ProgressWatcher::ProgressWatcher(std::function<Sample()> poll, std::function<void(const std::string&)> out,
                                 std::string log_name, double interval_s, std::chrono::milliseconds poll_every) {
  thread_ = std::thread(
      [this, poll = std::move(poll), out = std::move(out), log_name = std::move(log_name), interval_s, poll_every] {
        BuildProgress p(interval_s, log_name);
        const auto start = std::chrono::steady_clock::now();
        std::unique_lock lk(mu_);
        while (!cv_.wait_for(lk, poll_every, [this] { return stop_; })) {
          const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          lk.unlock();
          const auto s = poll();
          if (auto line = p.tick(t, s.size, s.tail)) { out(*line); }
          lk.lock();
        }
      });
}

ProgressWatcher::~ProgressWatcher() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace p2pnode::lifecycle
