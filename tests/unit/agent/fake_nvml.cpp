// A stand-in for libnvidia-ml.so.1 with the entry points src/host/nvml.cpp uses, for its dlopen
// path without a GPU: two H200s (0000:00:06.0, 0000:00:07.0) with 18 active NVLinks each to
// NVSwitches (bus ids no GPU has), NVML version 7 (what some drivers report for Hopper), NVLink
// P2P ok; a third GPU (0000:00:08.0) on PCIe only whose P2P reads are chipset_not_supported.
// Compute processes come from FAKE_NVML_PROCESSES ("GPU-INDEX:PID:NAME:BYTES;…"), so a test
// sets who is using which GPU. Types as nvml.h declares them.
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
static int g_inits = 0;

int nvmlInit_v2() { return ++g_inits, 0; }
int nvmlShutdown() { return --g_inits, 0; }
const char* nvmlErrorString(int r) { return r == 0 ? "Success" : "Not Found"; }
int nvmlSystemGetDriverVersion(char* v, unsigned n) { return std::snprintf(v, n, "580.159.04"), 0; }
int nvmlDeviceGetHandleByPciBusId_v2(const char* id, nvmlDevice_t* d) {
  const char* ids[3] = {"0000:00:06.0", "0000:00:07.0", "0000:00:08.0"};
  for (int i = 0; i < 3; ++i)
    if (std::strcmp(id, ids[i]) == 0) return *d = &g_dev[i], 0;
  return 6;  // NVML_ERROR_NOT_FOUND
}
int nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int* active) {
  if (link >= 18) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *active = d->index < 2 ? 1 : 0;
  return d->index < 2 ? 0 : 3;  // the PCIe-only GPU: NVML_ERROR_NOT_SUPPORTED
}
int nvmlDeviceGetNvLinkVersion(nvmlDevice_t, unsigned, unsigned* v) { return *v = 7, 0; }
int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->busId, sizeof p->busId, "00000000:%02X:%02X.0", 0xF0 + d->index, link % 4);
  return 0;
}
int nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int cap, int* status) {
  const bool nvlink_pair = a->index < 2 && b->index < 2;
  if (nvlink_pair) *status = 0;
  else *status = cap == 2 ? 5 : (cap == 0 || cap == 1 ? 1 : 5);  // NVLink not_supported; read/write CNS
  return 0;
}

struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
static const char* kIds[3] = {"0000:00:06.0", "0000:00:07.0", "0000:00:08.0"};

int nvmlDeviceGetCount_v2(unsigned* n) { return *n = 3, 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) { return i < 3 ? (*d = &g_dev[i], 0) : 2; }
int nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->busId, sizeof p->busId, "0000%s", kIds[d->index]);  // NVML's 8-digit domain
  return 0;
}
// FAKE_NVML_PROCESSES rows for GPU d, in order.
static unsigned fake_rows(int gpu, nvmlProcessInfo_t* out, unsigned room, char names[][64]) {
  const char* env = std::getenv("FAKE_NVML_PROCESSES");
  unsigned n = 0;
  std::string rows = env ? env : "";
  std::size_t at = 0;
  while (at < rows.size()) {
    const std::size_t end = rows.find(';', at) == std::string::npos ? rows.size() : rows.find(';', at);
    const std::string row = rows.substr(at, end - at);
    at = end + 1;
    int g = -1;
    unsigned pid = 0;
    char name[64] = {};
    unsigned long long bytes = 0;
    if (std::sscanf(row.c_str(), "%d:%u:%63[^:]:%llu", &g, &pid, name, &bytes) != 4 || g != gpu) continue;
    if (n < room && out) out[n] = {pid, bytes, 0, 0};
    if (n < room && names) std::snprintf(names[n], 64, "%s", name);
    ++n;
  }
  return n;
}
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* infos) {
  const unsigned n = fake_rows(d->index, nullptr, 0, nullptr);
  if (n > *count) return *count = n, 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  *count = fake_rows(d->index, infos, *count, nullptr);
  return 0;
}
int nvmlSystemGetProcessName(unsigned pid, char* name, unsigned len) {
  for (int g = 0; g < 3; ++g) {
    nvmlProcessInfo_t rows[16];
    char names[16][64];
    const unsigned n = fake_rows(g, rows, 16, names);
    for (unsigned k = 0; k < n && k < 16; ++k)
      if (rows[k].pid == pid) return std::snprintf(name, len, "/usr/bin/%s", names[k]), 0;
  }
  return 6;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  u->gpu = fake_rows(d->index, nullptr, 0, nullptr) ? 57 : 0;
  u->memory = 0;
  return 0;
}
}
