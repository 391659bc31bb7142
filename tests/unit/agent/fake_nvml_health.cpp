// A stand-in for libnvidia-ml.so.1 with the entry points src/host/health.cpp and driver_state.cpp
// use: three GPUs. GPU 0 (0000:18:00.0) and GPU 1 (0000:2a:00.0) are H200s with four NVLinks each,
// to each other; GPU 0's link 2 is down and its link 1 has replay and CRC counts; the ECC counter is
// not supported (NVML_ERROR_NOT_SUPPORTED). GPU 2 (0000:c1:00.0) is on PCIe only, on a driver whose
// field values lack the recovery action, and has no row remapper.
// The driver's state can be changed between reads: the file named by P2PNODE_FAKE_NVML_STATE holds
// `key=value` lines (gpuN.recovery, gpuN.replay, gpuN.rollover, gpuN.gen, gpuN.width, gpuN.pending,
// gpuN.failure, gpuN.ecc, p2p.A.B.CAP with CAP 0-4); what it does not name keeps the defaults below.
// Types as nvml.h declares them.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" {
struct nvmlDevice_st {
  int index;
};
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
static nvmlDevice_st g_dev[3] = {{0}, {1}, {2}};
static const char* g_ids[3] = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:C1:00.0"};

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int r) { return r == 0 ? "Success" : r == 3 ? "Not Supported" : "Invalid Argument"; }
int nvmlSystemGetDriverVersion(char* v, unsigned n) { return std::snprintf(v, n, "580.95.05"), 0; }
int nvmlDeviceGetCount_v2(unsigned* c) { return *c = 3, 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) { return i < 3 ? (*d = &g_dev[i], 0) : 2; }
int nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->busId, sizeof p->busId, "%s", g_ids[d->index]);
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_t d, char* n, unsigned len) {
  return std::snprintf(n, len, "%s", d->index < 2 ? "NVIDIA H200" : "NVIDIA L40S"), 0;
}
int nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int* active) {
  if (d->index == 2) return 3;   // NVML_ERROR_NOT_SUPPORTED: no NVLink
  if (link >= 4) return 2;       // NVML_ERROR_INVALID_ARGUMENT: no such link
  *active = !(d->index == 0 && link == 2);
  return 0;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->busId, sizeof p->busId, "%s", g_ids[d->index == 0 ? 1 : 0]);
  return 0;
}
static unsigned long long link_counter(int gpu, unsigned link, int counter) {
  return (gpu == 0 && link == 1) ? (counter == 0 ? 12 : counter == 2 ? 3 : counter == 3 ? 5 : 0) : 0;
}
static int g_legacy_calls = 0;  // nvmlDeviceGetNvLinkErrorCounter calls, for the test of the batched path
int fake_legacy_error_counter_calls() { return g_legacy_calls; }
int nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned link, int counter, unsigned long long* v) {
  ++g_legacy_calls;
  if (counter == 4) return 3;  // ECC data: not supported
  *v = link_counter(d->index, link, counter);
  return 0;
}

// --- the driver's state ----------------------------------------------------------------------
static long state(const std::string& key, long fallback) {
  const char* path = std::getenv("P2PNODE_FAKE_NVML_STATE");
  if (!path) return fallback;
  FILE* f = std::fopen(path, "r");
  if (!f) return fallback;
  char line[128];
  long v = fallback;
  while (std::fgets(line, sizeof line, f)) {
    const std::string l(line);
    const auto eq = l.find('=');
    if (eq != std::string::npos && l.substr(0, eq) == key) v = std::strtol(l.c_str() + eq + 1, nullptr, 10);
  }
  std::fclose(f);
  return v;
}
static std::string gpu_key(nvmlDevice_t d, const char* what) { return "gpu" + std::to_string(d->index) + "." + what; }

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  unsigned short usVal;
};
struct nvmlFieldValue_t {
  unsigned int fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType, nvmlReturn;
  nvmlValue_t value;
};
int nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t* v) {
  for (int i = 0; i < n; ++i) {
    v[i].nvmlReturn = 0;
    switch (v[i].fieldId) {
      case 230:  // recovery action: an unsigned int; GPU 2's driver predates the field
        if (d->index == 2) { v[i].nvmlReturn = 3; break; }
        v[i].valueType = 1;
        v[i].value.uiVal = static_cast<unsigned>(state(gpu_key(d, "recovery"), d->index == 1 ? 3 : 0));
        break;
      case 94:  // replay counter
        v[i].valueType = 1;
        v[i].value.uiVal = static_cast<unsigned>(state(gpu_key(d, "replay"), d->index == 0 ? 1 : 0));
        break;
      case 95:  // replay rollovers
        v[i].valueType = 1;
        v[i].value.uiVal = static_cast<unsigned>(state(gpu_key(d, "rollover"), 0));
        break;
      case 161: case 162: case 163:  // NVML_FI_DEV_NVLINK_ERROR_DL_*: replay, recovery, flit CRC of link scopeId
        v[i].valueType = 3;
        v[i].value.ullVal = link_counter(d->index, v[i].scopeId, static_cast<int>(v[i].fieldId) - 161);
        break;
      default: v[i].nvmlReturn = 2;
    }
  }
  return 0;
}
int nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned* v) { return *v = static_cast<unsigned>(state(gpu_key(d, "replay"), 0)), 0; }
int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned* v) { return *v = static_cast<unsigned>(state(gpu_key(d, "gen"), 5)), 0; }
int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t, unsigned* v) { return *v = 5, 0; }
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned* v) { return *v = static_cast<unsigned>(state(gpu_key(d, "width"), 16)), 0; }
int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t, unsigned* v) { return *v = 16, 0; }
int nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) {
  if (d->index == 2) return 3;  // an L40S-like board without the row remapper
  *corr = 0;
  *unc = static_cast<unsigned>(state(gpu_key(d, "unc_rows"), 0));
  *pending = static_cast<unsigned>(state(gpu_key(d, "pending"), 0));
  *failure = static_cast<unsigned>(state(gpu_key(d, "failure"), 0));
  return 0;
}
int nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long* v) {
  if (type != 1 || counter != 0) return 2;  // only volatile uncorrected is asked for
  return *v = static_cast<unsigned long long>(state(gpu_key(d, "ecc"), 0)), 0;
}
// GPU 0 and 1 talk NVLink (PCI P2P not supported between them, as on the H200 box); GPU 2 is behind
// the chipset (CNS to both).
int nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int cap, int* st) {
  const std::string key = "p2p." + std::to_string(a->index) + "." + std::to_string(b->index) + "." + std::to_string(cap);
  int def = 0;
  if (a->index == 2 || b->index == 2) def = 1;
  else if (cap == 4) def = 5;
  *st = static_cast<int>(state(key, def));
  return 0;
}
}
