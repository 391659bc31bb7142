// The driver's own word on each GPU, read through NVML without a CUDA context: the recovery action
// (a field value), the GPU's PCIe replay counters and link, row remapping and volatile uncorrected
// ECC; and the P2P status of every ordered pair. Each call is optional: an NVML that lacks an entry
// point or answers "not supported" leaves the value empty, never the whole reading.
#include "driver_state.hpp"

#include <cstring>

namespace p2pnode::agent {

namespace {
using nvml::Device;
using nvml::kSuccess;
using nvml::Return;

// nvmlFieldValue_t and its value union as nvml.h lays them out (40 bytes).
union FieldValueUnion {
  double d;
  int si;
  unsigned ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
  unsigned short us;
};
struct FieldValue {
  unsigned field_id;
  unsigned scope_id;
  long long timestamp;
  long long latency_us;
  int value_type;  // nvmlValueType_t: 0 double, 1 uint, 2 ulong, 3 ulonglong, 4 slonglong, 5 sint, 6 ushort
  Return ret;
  FieldValueUnion value;
};
static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t is 40 bytes");

constexpr unsigned kFieldReplay = 94;           // NVML_FI_DEV_PCIE_REPLAY_COUNTER
constexpr unsigned kFieldReplayRollover = 95;   // NVML_FI_DEV_PCIE_REPLAY_ROLLOVER_COUNTER
constexpr unsigned kFieldRecoveryAction = 230;  // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
constexpr int kUncorrected = 1;                 // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatile = 0;                    // NVML_VOLATILE_ECC

std::optional<std::uint64_t> as_u64(const FieldValue& f) {
  if (f.ret != kSuccess) { return std::nullopt; }
  switch (f.value_type) {
    case 1: return f.value.ui;
    case 2: return f.value.ul;
    case 3: return f.value.ull;
    case 4:
      return f.value.sll < 0 ? std::nullopt : std::optional<std::uint64_t>(static_cast<std::uint64_t>(f.value.sll));
    case 5: return f.value.si < 0 ? std::nullopt : std::optional<std::uint64_t>(static_cast<std::uint64_t>(f.value.si));
    case 6: return f.value.us;
    default: return std::nullopt;  // a double is not a counter
  }
}
}  // namespace

bool DriverCalls::resolve(nvml::Lib& n) {
  n.sym(field_values, "nvmlDeviceGetFieldValues");
  n.sym(replay, "nvmlDeviceGetPcieReplayCounter");
  n.sym(gen, "nvmlDeviceGetCurrPcieLinkGeneration");
  n.sym(max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
  n.sym(width, "nvmlDeviceGetCurrPcieLinkWidth");
  n.sym(max_width, "nvmlDeviceGetMaxPcieLinkWidth");
  n.sym(remapped_rows, "nvmlDeviceGetRemappedRows");
  n.sym(ecc_total, "nvmlDeviceGetTotalEccErrors");
  n.sym(p2p_status, "nvmlDeviceGetP2PStatus");
  return true;
}

void read_driver_state(const nvml::Lib& n, const DriverCalls& c, Device dev, GpuHealth& g) {
  if (c.field_values) {
    FieldValue f[3];
    std::memset(f, 0, sizeof f);
    f[0].field_id = kFieldRecoveryAction;
    f[1].field_id = kFieldReplay;
    f[2].field_id = kFieldReplayRollover;
    if (const auto r = c.field_values(dev, 3, f); r != kSuccess) {
      g.recovery_problem = "nvmlDeviceGetFieldValues failed: " + n.err(r);
    } else {
      if (const auto v = as_u64(f[0])) {
        g.recovery_action = static_cast<unsigned>(*v);
      } else {
        g.recovery_problem = "the recovery action field is not answered: " + n.err(f[0].ret);
      }
      g.pcie.replay = as_u64(f[1]);
      g.pcie.replay_rollover = as_u64(f[2]);
    }
  } else {
    g.recovery_problem = "NVML has no nvmlDeviceGetFieldValues";
  }
  unsigned v = 0;
  if (!g.pcie.replay && c.replay && c.replay(dev, &v) == kSuccess) { g.pcie.replay = v; }
  if (c.gen && c.gen(dev, &v) == kSuccess) { g.pcie.gen = v; }
  if (c.max_gen && c.max_gen(dev, &v) == kSuccess) { g.pcie.max_gen = v; }
  if (c.width && c.width(dev, &v) == kSuccess) { g.pcie.width = v; }
  if (c.max_width && c.max_width(dev, &v) == kSuccess) { g.pcie.max_width = v; }
  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  if (c.remapped_rows && c.remapped_rows(dev, &corr, &unc, &pending, &failure) == kSuccess) {
    g.memory.remapped_correctable = corr;
    g.memory.remapped_uncorrectable = unc;
    g.memory.remap_pending = pending != 0;
    g.memory.remap_failure = failure != 0;
  }
  unsigned long long ecc = 0;
  if (c.ecc_total && c.ecc_total(dev, kUncorrected, kVolatile, &ecc) == kSuccess) {
    g.memory.volatile_uncorrected = ecc;
  }
}

void read_link_counters(const DriverCalls& c, Device dev, std::vector<NvlinkHealth>& links) {
  // nvmlNvLinkErrorCounter_t 0-2 as field ids (measured equal, link by link, on 4x H200).
  constexpr unsigned kIds[3] = {161, 162, 163};  // NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, _RECOVERY, _CRC
  if (!c.field_values || links.empty()) { return; }
  std::vector<FieldValue> f(links.size() * 3);
  std::memset(f.data(), 0, f.size() * sizeof(FieldValue));
  for (std::size_t l = 0; l < links.size(); ++l) {
    for (int k = 0; k < 3; ++k) {
      f[l * 3 + k].field_id = kIds[k];
      f[l * 3 + k].scope_id = links[l].link;
    }
  }
  if (c.field_values(dev, static_cast<int>(f.size()), f.data()) != kSuccess) { return; }
  for (std::size_t l = 0; l < links.size(); ++l) {
    for (int k = 0; k < 3; ++k) {
      if (const auto v = as_u64(f[l * 3 + k])) { links[l].errors[k] = *v; }
    }
  }
}

std::vector<P2pStatus> read_p2p_status(const DriverCalls& c, const std::vector<Device>& devs) {
  std::vector<P2pStatus> out;
  if (!c.p2p_status) { return out; }
  for (unsigned a = 0; a < devs.size(); ++a) {
    for (unsigned b = 0; b < devs.size(); ++b) {
      if (a == b || !devs[a] || !devs[b]) { continue; }
      P2pStatus p;
      p.gpu = a;
      p.peer = b;
      for (int cap = 0; cap < 5; ++cap) {
        int st = 0;
        if (c.p2p_status(devs[a], devs[b], cap, &st) == kSuccess) { p.status[cap] = st; }
      }
      out.push_back(p);
    }
  }
  return out;
}

std::string recovery_action_name(unsigned a) {
  static const char* names[] = {"none",      "gpu_reset",       "node_reboot",
                                "drain_p2p", "drain_and_reset", "recover_imex_domain"};
  return a < 6 ? names[a] : "unknown_" + std::to_string(a);
}

}  // namespace p2pnode::agent
