// A stand-in for libnvidia-ml.so.1 shaped like a healthy 4x H100 SXM box (docs FACTS): GPUs
// 0000:00:06.0 to 0000:00:09.0, 18 NVLinks each, 6 to each peer (NV18 every pair). Its counters rise
// as that box's did: NVML's ecc_data at 0.66 a second a link at rest (2,840 in 60 s over 72 links)
// and 18.7 a second a link during a self-test (about 5,800 in 4.3 s over 72 links), spread unevenly
// over the links (0.5x to 1.5x of the mean); replay, recovery and both CRC counters stay 0; the PCIe
// replay counters stand at 10, 2, 13 and 0. The file named by P2PNODE_FAKE_NVML_STATE says where the
// clock is (`t=` seconds, `selftest=` seconds of self-test so far) and may name one bad link
// (`bad_gpu=`, `bad_link=`, `bad_kind=` 1: replays and recoveries, 2: corrected ECC at 2,000 a
// second). Types as nvml.h declares them.
#include <cmath>
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
}

namespace {
constexpr int kGpus = 4;
constexpr unsigned kLinks = 18;
constexpr double kIdlePerLink = 2840.0 / 60 / 72;       // the healthy 4x H100 box, idle
constexpr double kSelftestPerLink = 5800.0 / 4.3 / 72;  // the same box, one self-test
nvmlDevice_st g_dev[kGpus] = {{0}, {1}, {2}, {3}};
const char* g_ids[kGpus] = {"00000000:00:06.0", "00000000:00:07.0", "00000000:00:08.0", "00000000:00:09.0"};
const unsigned g_pcie_replays[kGpus] = {10, 2, 13, 0};

double state(const char* key, double fallback) {
  const char* path = std::getenv("P2PNODE_FAKE_NVML_STATE");
  if (!path) return fallback;
  FILE* f = std::fopen(path, "r");
  if (!f) return fallback;
  char line[128];
  double v = fallback;
  const std::size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, n) == 0 && line[n] == '=') v = std::strtod(line + n + 1, nullptr);
  std::fclose(f);
  return v;
}
// Link l of GPU g goes to the (l / 6)-th of the other three GPUs.
int peer(int g, unsigned l) {
  const int k = static_cast<int>(l / 6);
  return k < g ? k : k + 1;
}
bool bad(int g, unsigned l, int kind) {
  return static_cast<int>(state("bad_kind", 0)) == kind && static_cast<int>(state("bad_gpu", -1)) == g &&
         static_cast<int>(state("bad_link", -1)) == static_cast<int>(l);
}
// counter: 0 replay, 1 recovery, 2 crc_flit, 3 crc_data, 4 ecc_data (nvmlNvLinkErrorCounter_t)
unsigned long long counter(int g, unsigned l, int c) {
  const double t = state("t", 0), selftest = state("selftest", 0);
  if (c == 4) {
    const double spread = 0.5 + (l % 5) * 0.25;  // the mean over five links is 1
    double v = spread * (kIdlePerLink * t + kSelftestPerLink * selftest);
    if (bad(g, l, 2)) v += 2000 * t;
    return static_cast<unsigned long long>(std::floor(v));
  }
  if (bad(g, l, 1) && c == 0) return static_cast<unsigned long long>(t / 20);   // 3 replays a minute
  if (bad(g, l, 1) && c == 1) return static_cast<unsigned long long>(t / 120);  // a recovery every 2 minutes
  return 0;
}
}  // namespace

extern "C" {
int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int r) { return r == 0 ? "Success" : r == 3 ? "Not Supported" : "Invalid Argument"; }
int nvmlSystemGetDriverVersion(char* v, unsigned n) { return std::snprintf(v, n, "580.159.04"), 0; }
int nvmlDeviceGetCount_v2(unsigned* c) { return *c = kGpus, 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) { return i < kGpus ? (*d = &g_dev[i], 0) : 2; }
int nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->busId, sizeof p->busId, "%s", g_ids[d->index]);
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_t, char* n, unsigned len) { return std::snprintf(n, len, "NVIDIA H100 80GB HBM3"), 0; }
int nvmlDeviceGetNvLinkState(nvmlDevice_t, unsigned link, int* active) {
  if (link >= kLinks) return 2;
  return *active = 1, 0;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->busId, sizeof p->busId, "%s", g_ids[peer(d->index, link)]);
  return 0;
}
int nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned link, int c, unsigned long long* v) {
  if (link >= kLinks || c < 0 || c > 4) return 2;
  return *v = counter(d->index, link, c), 0;
}
int nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t* v) {
  for (int i = 0; i < n; ++i) {
    v[i].nvmlReturn = 0;
    switch (v[i].fieldId) {
      case 230: v[i].valueType = 1; v[i].value.uiVal = 0; break;  // recovery action: none
      case 94: v[i].valueType = 1; v[i].value.uiVal = g_pcie_replays[d->index]; break;
      case 95: v[i].valueType = 1; v[i].value.uiVal = 0; break;
      case 161: case 162: case 163:  // NVML_FI_DEV_NVLINK_ERROR_DL_*: replay, recovery, flit CRC of link scopeId
        v[i].valueType = 3;
        v[i].value.ullVal = counter(d->index, v[i].scopeId, static_cast<int>(v[i].fieldId) - 161);
        break;
      default: v[i].nvmlReturn = 2;
    }
  }
  return 0;
}
int nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned* v) { return *v = g_pcie_replays[d->index], 0; }
int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t, unsigned* v) { return *v = 5, 0; }
int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t, unsigned* v) { return *v = 5, 0; }
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t, unsigned* v) { return *v = 16, 0; }
int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t, unsigned* v) { return *v = 16, 0; }
int nvmlDeviceGetRemappedRows(nvmlDevice_t, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) {
  *corr = *unc = *pending = *failure = 0;
  return 0;
}
int nvmlDeviceGetTotalEccErrors(nvmlDevice_t, int type, int c, unsigned long long* v) {
  if (type != 1 || c != 0) return 2;
  return *v = 0, 0;
}
// NVLink between every pair: read, write, NVLink and atomics OK; PCI P2P not supported (the H100 box's).
int nvmlDeviceGetP2PStatus(nvmlDevice_t, nvmlDevice_t, int cap, int* st) { return *st = cap == 4 ? 5 : 0, 0; }
}
