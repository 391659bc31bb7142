// A stand-in for libnvidia-ml.so.1 with the entry points src/host/health.cpp uses: three GPUs.
// GPU 0 (0000:18:00.0) and GPU 1 (0000:2a:00.0) are H200s with four NVLinks each, to each other;
// GPU 0's link 2 is down and its link 1 has replay and CRC counts; the ECC counter is not supported
// (NVML_ERROR_NOT_SUPPORTED). GPU 2 (0000:c1:00.0) is on PCIe only. Types as nvml.h declares them.
#include <cstdio>
#include <cstring>

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
int nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned link, int counter, unsigned long long* v) {
  if (counter == 4) return 3;  // ECC data: not supported
  *v = (d->index == 0 && link == 1) ? (counter == 0 ? 12 : counter == 2 ? 3 : 0) : 0;
  return 0;
}
}
