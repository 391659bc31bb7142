// The kernel log's reports that are not Xids (kernel_log.hpp): a GPU that fell off the bus without
// an Xid number, and the kernel's own AER reports naming a GPU, drive or bridge: findings
// health.kernel within the window, naming the device and its P2P pairs, as the Xids are. Part of
// HealthMonitor (monitor.hpp); pure like the rest of it.
#include <cmath>

#include "health/monitor.hpp"
#include "health/thresholds.hpp"

namespace p2pnode::health {

void HealthMonitor::assess_kernel(const HealthSample& s, const PathIndex& paths) {
  using json = nlohmann::json;
  for (const auto& ev : s.xid.kernel_events) {
    if (ev.seq && last_kernel_seq_ && *ev.seq <= *last_kernel_seq_) {
      continue;  // read again
    }
    if (ev.seq) { last_kernel_seq_ = ev.seq; }
    recent_kernel_.push_back({ev, s.mono_s});
    if (recent_kernel_.size() > 4096) { recent_kernel_.pop_front(); }
  }
  auto age = [&](const SeenKernel& x) {
    if (s.xid.uptime_s && x.ev.ts_us) { return *s.xid.uptime_s - static_cast<double>(*x.ev.ts_us) / 1e6; }
    return s.mono_s - x.seen_mono;
  };
  while (!recent_kernel_.empty() && age(recent_kernel_.front()) > window_.window()) { recent_kernel_.pop_front(); }
  std::map<std::pair<std::string, std::string>, std::vector<const SeenKernel*>> by;  // (device, what)
  json recent = json::array();
  for (const auto& x : recent_kernel_) {
    if (age(x) > window_.window()) { continue; }
    by[{x.ev.bdf, x.ev.kind == "aer" ? "aer " + x.ev.aer_class : x.ev.kind}].push_back(&x);
    recent.push_back({{"device", x.ev.bdf},
                      {"kind", x.ev.kind},
                      {"class", x.ev.aer_class.empty() ? json(nullptr) : json(x.ev.aer_class)},
                      {"message", x.ev.message},
                      {"age_s", std::round(age(x))}});
  }
  if (recent.size() > 50) { recent.erase(recent.begin(), recent.end() - 50); }
  if (xid_.is_object()) { xid_["kernel"] = recent; }
  for (const auto& [k, evs] : by) {
    const auto& [dev, what] = k;
    const SeenKernel& last = *evs.back();
    // Correctable reports are judged by their rate over the window, as the AER counters are.
    if (last.ev.kind == "aer" && !over_limit(limits_.aer_limit(last.ev.aer_class), evs.size(), window_.window())) {
      continue;
    }
    const auto kind = paths.kind.find(dev);
    const std::string devkind = kind == paths.kind.end() ? "device" : kind->second;
    const auto pit = paths.pairs.find(dev);
    const std::vector<std::string> pairs = pit == paths.pairs.end()
                                               ? std::vector<std::string>{}
                                               : std::vector<std::string>(pit->second.begin(), pit->second.end());
    std::string on;
    for (std::size_t i = 0; i < pairs.size() && i < 4; ++i) { on += (i ? ", " : "; on P2P paths: ") + pairs[i]; }
    Finding f;
    f.check = "health.kernel";
    f.subject = dev;
    const bool fell = last.ev.kind == "fallen_off_bus";
    f.severity = fell || last.ev.aer_class != "correctable" ? Severity::error : Severity::warning;
    f.summary =
        fell ? "GPU " + dev + " has fallen off the bus and is not responding (the driver's report, no Xid number" +
                   (last.ev.detail.empty() ? ")" : ", " + last.ev.detail + ")")
             : "the kernel reported " + std::to_string(evs.size()) + " " + last.ev.aer_class + " PCIe AER error" +
                   (evs.size() == 1 ? "" : "s") + " on " + devkind + " " + dev + " (" + last.ev.detail + ")";
    f.summary += " in the last " + window_text(window_.window()) + on;
    f.observed = {{"kind", last.ev.kind}, {"class", last.ev.aer_class},
                  {"count", evs.size()},  {"last_message", last.ev.message},
                  {"pairs", pairs},       {"source", "kernel log"}};
    f.expected = {{"events", 0}, {"window_s", window_.window()}};
    f.remediation =
        fell ? "Drain the node; check power, seating, risers and the slot; a reboot (or a GPU reset) is needed "
               "before the GPU answers again"
        : last.ev.aer_class == "correctable"
            ? "Correctable errors are retried by the link and cost bandwidth; a steady rate points at the "
              "slot, riser, retimer or cable of " +
                  dev + "'s link: reseat it"
            : "Uncorrectable errors can corrupt or drop P2P transfers: drain the node, reseat or replace "
              "the card, riser or cable on " +
                  dev + "'s link";
    findings_.push_back(std::move(f));
  }
}

}  // namespace p2pnode::health
