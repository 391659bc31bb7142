#pragma once
// Progress of a long DKMS build (the real tree takes minutes and DKMS itself prints only dots):
// at least one line every interval with the elapsed time, make.log's size and the file being
// compiled. BuildProgress is pure (the caller passes the clock and the log); ProgressWatcher
// runs it on a thread beside the blocking build.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace p2pnode::lifecycle {

// The object or source a build log is at: the last "CC [M]  path", "CC path", "LD [M] path" line.
std::optional<std::string> compiling_now(std::string_view log_tail);

class BuildProgress {
 public:
  explicit BuildProgress(double interval_s = 30, std::string log_name = "make.log")
      : interval_s_(interval_s), log_name_(std::move(log_name)) {}
  // At elapsed_s seconds into the build, with make.log's size and its last bytes: the line to
  // print, or nullopt when the last one is less than interval_s old.
  std::optional<std::string> tick(double elapsed_s, std::optional<std::uintmax_t> log_size, std::string_view log_tail);

 private:
  double interval_s_;
  std::string log_name_;  // how the lines name the log ("make.log", "nvidia-p2p-550.90.07-core.log")
  double last_s_ = 0;
  std::uintmax_t last_size_ = 0;
};

// Calls `poll` every poll_every and prints what BuildProgress says through `out`, until destroyed.
class ProgressWatcher {
 public:
  struct Sample {
    std::optional<std::uintmax_t> size;
    std::string tail;
  };
  ProgressWatcher(std::function<Sample()> poll, std::function<void(const std::string&)> out,
                  std::string log_name = "make.log", double interval_s = 30,
                  std::chrono::milliseconds poll_every = std::chrono::seconds(5));
  ~ProgressWatcher();
  ProgressWatcher(const ProgressWatcher&) = delete;
  ProgressWatcher& operator=(const ProgressWatcher&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace p2pnode::lifecycle
