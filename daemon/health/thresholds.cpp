#include "health/thresholds.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace p2pnode::health {

// Sources:
// [DCGM] NVIDIA DCGM, dcgmlib/src/dcgm_gpu_hardware_limits.h and its NVLink health watch
//   (DcgmHealthWatch MonitorNVLink): replay and recovery errors fail at any rise
//   (DCGM_LIMIT_MAX_NVLINK_ERROR 1); CRC flit and data errors fail at 100 per second or more
//   (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR 100.0, "RM has informed us that CRC errors only matter at
//   rates of 100+ per second"), which DCGM applies to the GPU's total; PCIe replays fail at 8 per
//   minute (DCGM_LIMIT_MAX_PCIREPLAY_RATE 8, "the maximum recommended by RM"). DCGM's health watch
//   does not read NVLink's ECC data counter at all.
// [H100] Healthy 4x H100 SXM, driver 580.159.04 (docs FACTS): NVML's ecc_data rose by
//   2,840 in 60 s idle over 72 links (0.66/s a link), about 5,800 in each 4.3 s self-test
//   (18.7/s a link, the highest measured) and 4,398 in 5.3 s of nvbandwidth (11.5/s a link);
//   replay, recovery, crc_flit and crc_data stayed 0. PCIe replay counters 0, 10, 2 and 13.
// [H200] Healthy 2x H200, same driver (tests/gpu/run-driver-health.sh, docs/testing.md): crc_data rose by
//   1 to 7 a link within about 12 s with ecc_data (at most 0.6/s a link, about 10/s a GPU);
//   replay and recovery 0.
const HealthLimits& HealthLimits::defaults() {
  static const HealthLimits d = [] {
    HealthLimits l;
    l.nvlink = {
        // A replay is a retransmission after an error the link could not correct: any is a finding [DCGM].
        {"replay", 1, 0, Severity::warning, "DCGM: any NVLink replay fails its health watch"},
        // A recovery retrains the link and stalls every transfer on it [DCGM].
        {"recovery", 1, 0, Severity::error, "DCGM: any NVLink recovery fails its health watch"},
        // A flit that fails its CRC is dropped and replayed; healthy H100s and H200s showed none [H100, H200].
        {"crc_flit", 1, 0, Severity::warning, "DCGM warns at any CRC flit error; healthy H100/H200 links showed none"},
        // Healthy H200 links count a few data CRC errors a minute [H200]: DCGM's failing rate, per link.
        {"crc_data", 1, 100, Severity::warning,
         "DCGM: CRC errors matter at 100/s or more; healthy H200 links count up to 0.6/s"},
        // Corrected on the link, no data lost: rises with traffic and at rest [H100]. 1000/s a link is 50x
        // the highest healthy rate (18.7/s under a self-test) and 3x what a GPU's 18 links reach together
        // at that rate (337/s), so the alert on the GPU's sum is silent on a healthy GPU at full traffic.
        {"ecc_data", 1, 1000, Severity::warning,
         "no NVIDIA limit (DCGM does not watch it); 50x the highest healthy rate measured on H100 (18.7/s a link)"},
    };
    l.pcie_replay = {"replay", 1, 8.0 / 60, Severity::warning,
                     "DCGM: 8 PCIe replays a minute is the most NVIDIA's driver team recommends"};
    l.pcie_rollover = {"replay_rollover", 1, 0, Severity::warning,
                       "a rollover means one packet was replayed until the counter wrapped: the link retrained"};
    // Every correctable AER error (bad TLP, bad DLLP, receiver error, replay timeout) costs a replay: the
    // same rate as the GPU's replay counter [DCGM]. Uncorrectable errors are findings at any count.
    l.aer_correctable = {"correctable", 1, 8.0 / 60, Severity::warning,
                         "as DCGM's PCIe replay limit: 8 a minute (each correctable error costs a replay)"};
    l.aer_nonfatal = {"nonfatal", 1, 0, Severity::error, "any uncorrectable PCIe error"};
    l.aer_fatal = {"fatal", 1, 0, Severity::error, "any uncorrectable PCIe error"};
    return l;
  }();
  return d;
}

const CounterLimit* HealthLimits::nvlink_limit(std::string_view counter) const {
  for (const auto& l : nvlink) {
    if (counter == l.counter) { return &l; }
  }
  return nullptr;
}
CounterLimit* HealthLimits::nvlink_limit(std::string_view counter) {
  for (auto& l : nvlink) {
    if (counter == l.counter) { return &l; }
  }
  return nullptr;
}
const CounterLimit& HealthLimits::aer_limit(std::string_view aer_class) const {
  if (aer_class == "correctable") { return aer_correctable; }
  return aer_class == "nonfatal" ? aer_nonfatal : aer_fatal;
}

double rate_per_second(std::uint64_t rise, double span_s) {
  return static_cast<double>(rise) / std::max(span_s, kMinRateSpanS);
}

bool over_limit(const CounterLimit& l, std::uint64_t rise, double span_s) {
  return rise >= l.min_rise && rise > 0 && rate_per_second(rise, span_s) >= l.per_second;
}

std::string limit_text(const CounterLimit& l) {
  char b[48];
  if (l.per_second <= 0) {
    std::snprintf(b, sizeof b, "any");
  } else if (l.per_second < 1) {
    std::snprintf(b, sizeof b, "%g/min", std::round(l.per_second * 60 * 100) / 100);
  } else {
    std::snprintf(b, sizeof b, "%g/s", l.per_second);
  }
  return b;
}

}  // namespace p2pnode::health
