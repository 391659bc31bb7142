#pragma once
// The health monitor: fed one HealthSample per pass, it keeps the counters' windows and the recent
// Xid events, and says what rose faster than healthy hardware lets it (thresholds.hpp): findings health.aer,
// health.link, health.nvlink, health.xid, health.kernel (kernel_verdict.cpp: the log's reports that are not Xids), and
// from the driver's own word (driver_verdict.cpp) health.recovery, health.gpu_pcie, health.memory,
// health.p2p_status, each naming the device and the P2P paths it is on. Pure: no clock, no I/O.
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/finding.hpp"
#include "health/paths.hpp"
#include "health/sample.hpp"
#include "health/thresholds.hpp"
#include "health/window.hpp"

namespace p2pnode::health {

inline constexpr int kHealthSchemaVersion = 1;

class HealthMonitor {
 public:
  explicit HealthMonitor(double window_s = 600) : window_(window_s) {}
  void set_window(double window_s) { window_.set_window(window_s); }
  // The limits it judges by (the configuration's health.limits); the defaults until set.
  void set_limits(HealthLimits limits) { limits_ = std::move(limits); }
  const HealthLimits& limits() const { return limits_; }
  double window() const { return window_.window(); }

  void update(const HealthSample& s, const PathIndex& paths);

  const std::vector<Finding>& findings() const { return findings_; }
  std::uint64_t passes() const { return passes_; }
  // The /v1/health body's data part: devices, nvlink, xid, findings (the engine adds the rest).
  nlohmann::json view() const;

 private:
  void assess_aer(const HealthSample& s, const PathIndex& paths);
  void assess_link(const HealthSample& s, const PathIndex& paths);
  void assess_nvlink(const HealthSample& s, const PathIndex& paths);
  void assess_xid(const HealthSample& s, const PathIndex& paths);
  void assess_driver(const HealthSample& s, const PathIndex& paths);  // driver_verdict.cpp
  void assess_kernel(const HealthSample& s, const PathIndex& paths);  // kernel_verdict.cpp

  struct SeenXid {
    XidEvent ev;
    double seen_mono = 0;
  };
  CounterWindow window_;
  HealthLimits limits_ = HealthLimits::defaults();
  std::uint64_t passes_ = 0;
  std::vector<Finding> findings_;
  nlohmann::json devices_ = nlohmann::json::array(), nvlink_ = nlohmann::json::object(),
                 xid_ = nlohmann::json::object();
  nlohmann::json gpus_ = nlohmann::json::array(), p2p_status_ = nlohmann::json::array();
  std::set<std::string> links_seen_active_;                          // "gpu/link"
  std::set<std::string> p2p_seen_ok_;                                // "gpu>peer/capability" once seen "ok"
  std::map<std::pair<std::string, int>, std::uint64_t> xid_counts_;  // (gpu, xid) -> events read
  std::deque<SeenXid> recent_xids_;                                  // within the window, the newest 4096
  std::optional<std::uint64_t> last_xid_seq_;
  struct SeenKernel {
    KernelEvent ev;
    double seen_mono = 0;
  };
  std::deque<SeenKernel> recent_kernel_;  // fallen off the bus, AER reports: the newest 4096
  std::optional<std::uint64_t> last_kernel_seq_;
};

// True for the recovery actions that ask for peer traffic to stop (drain_p2p, drain_and_reset): a
// node with such a GPU is not P2P-ready until the driver clears it.
bool recovery_blocks_p2p(const std::string& action);
// "RxErr +2, BadTLP +1": the named counters that rose, for a summary.
std::string describe_rises(const std::map<std::string, std::uint64_t>& rises);
// "10m", "90s", "2h": a window for people.
std::string window_text(double seconds);
// "4.8/min", "1200/s": a counter's rate for people.
std::string rate_text(double per_second);

}  // namespace p2pnode::health
