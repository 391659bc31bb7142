// A stand-in for libnvidia-ml.so.1 with every entry point the agent's NVML code uses
// (src/host/nvml.cpp, gpu_processes.cpp, health.cpp, driver_state.cpp), for its dlopen path
// without a GPU. Each entry point is defined here once; what it answers comes from the box that
// P2PNODE_FAKE_NVML_BOX names (box.hpp; one file per box):
//   h200-nvswitch   two H200s on NVSwitch and a PCIe-only third GPU (nvml_test, gpu_processes_test)
//   h200-pair-l40s  two H200s linked to each other and an L40S, driver state from a file (health_test)
//   h100x4          a healthy 4x H100 box whose counters rise with a clock in a file (quiet_box_test)
// The variable is read on every call, not at load: one test binary dlopens the library once and
// its tests ask for different boxes in turn. Without it (or with a name no box has) nvmlInit_v2
// fails, so a test that forgot to choose says so instead of reading some other box.
// Every box's compute processes come from FAKE_NVML_PROCESSES ("GPU-INDEX:PID:NAME:BYTES;…"), so
// a test sets who is using which GPU.
#include <strings.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "box.hpp"

namespace p2pnode::fake_nvml {

double state(const char* key, double fallback) {
  const char* path = std::getenv("P2PNODE_FAKE_NVML_STATE");
  if (!path) { return fallback; }
  FILE* f = std::fopen(path, "r");
  if (!f) { return fallback; }
  char line[128];
  double v = fallback;
  const std::size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, key, n) == 0 && line[n] == '=') { v = std::strtod(line + n + 1, nullptr); }
  }
  std::fclose(f);
  return v;
}

namespace {

const Box* chosen_box() {
  const char* name = std::getenv("P2PNODE_FAKE_NVML_BOX");
  if (!name) { return nullptr; }
  for (const Box* b : {&h200_nvswitch(), &h200_pair_l40s(), &h100x4()}) {
    if (std::strcmp(b->name, name) == 0) { return b; }
  }
  return nullptr;
}

// A handle is its GPU's index; room for eight GPUs, more than any box has.
nvmlDevice_st g_dev[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};

int gpu_count(const Box& b) { return static_cast<int>(b.bus_ids.size()); }

// The bus id as the agent passes it ("0000:18:00.0", lower case) is NVML's without the domain's
// first four digits, in either case.
bool same_bus_id(const char* nvml_id, const char* asked) {
  const std::size_t n = std::strlen(nvml_id), m = std::strlen(asked);
  if (m > n) { return false; }
  return strcasecmp(nvml_id + (n - m), asked) == 0 && (m == n || std::strspn(nvml_id, "0") >= n - m);
}

// FAKE_NVML_PROCESSES rows for GPU `gpu`, in order.
unsigned fake_rows(int gpu, nvmlProcessInfo_t* out, unsigned room, char names[][64]) {
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
    if (std::sscanf(row.c_str(), "%d:%u:%63[^:]:%llu", &g, &pid, name, &bytes) != 4 || g != gpu) { continue; }
    if (n < room && out) { out[n] = {pid, bytes, 0, 0}; }
    if (n < room && names) { std::snprintf(names[n], 64, "%s", name); }
    ++n;
  }
  return n;
}

int g_legacy_calls = 0;  // nvmlDeviceGetNvLinkErrorCounter calls, for the test of the batched path

}  // namespace
}  // namespace p2pnode::fake_nvml

using namespace p2pnode::fake_nvml;

// Every entry point below that takes a device asks the chosen box; without one there is no handle
// to pass (nvmlInit_v2 failed), so only the calls without a device check.
#define FAKE_NVML_BOX_OR_FAIL    \
  const Box* box = chosen_box(); \
  if (!box) return kUninitialized

extern "C" {
int fake_legacy_error_counter_calls() { return g_legacy_calls; }

int nvmlInit_v2() { return chosen_box() ? kSuccess : kUninitialized; }
int nvmlShutdown() { return kSuccess; }
const char* nvmlErrorString(int r) {
  switch (r) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized (no P2PNODE_FAKE_NVML_BOX, or none by that name)";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case kNotFound: return "Not Found";
    case kInsufficientSize: return "Insufficient Size";
    default: return "Unknown Error";
  }
}
int nvmlSystemGetDriverVersion(char* v, unsigned n) {
  FAKE_NVML_BOX_OR_FAIL;
  return std::snprintf(v, n, "%s", box->driver_version), kSuccess;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
  FAKE_NVML_BOX_OR_FAIL;
  return *n = static_cast<unsigned>(gpu_count(*box)), kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  FAKE_NVML_BOX_OR_FAIL;
  return i < static_cast<unsigned>(gpu_count(*box)) ? (*d = &g_dev[i], kSuccess) : kInvalidArgument;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* id, nvmlDevice_t* d) {
  FAKE_NVML_BOX_OR_FAIL;
  for (int i = 0; i < gpu_count(*box); ++i) {
    if (same_bus_id(box->bus_ids[static_cast<unsigned>(i)], id)) { return *d = &g_dev[i], kSuccess; }
  }
  return kNotFound;
}
int nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  FAKE_NVML_BOX_OR_FAIL;
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->busId, sizeof p->busId, "%s", box->bus_ids[static_cast<unsigned>(d->index)]);
  return kSuccess;
}
int nvmlDeviceGetName(nvmlDevice_t d, char* n, unsigned len) {
  FAKE_NVML_BOX_OR_FAIL;
  const char* name = box->gpu_name(d->index);
  return name ? (std::snprintf(n, len, "%s", name), kSuccess) : kNotSupported;
}
int nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int* active) {
  FAKE_NVML_BOX_OR_FAIL;
  return box->link_state(d->index, link, active);
}
int nvmlDeviceGetNvLinkVersion(nvmlDevice_t d, unsigned link, unsigned* v) {
  FAKE_NVML_BOX_OR_FAIL;
  return box->link_version(d->index, link, v);
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_t* p) {
  FAKE_NVML_BOX_OR_FAIL;
  std::memset(p, 0, sizeof *p);
  return box->link_remote(d->index, link, p->busId, sizeof p->busId);
}
int nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned link, int counter, unsigned long long* v) {
  FAKE_NVML_BOX_OR_FAIL;
  ++g_legacy_calls;
  return box->error_counter(d->index, link, counter, v);
}
int nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t* v) {
  FAKE_NVML_BOX_OR_FAIL;
  for (int i = 0; i < n; ++i) {
    v[i].nvmlReturn = kSuccess;
    box->field_value(d->index, v[i]);
  }
  return kSuccess;
}
int nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned* v) {
  FAKE_NVML_BOX_OR_FAIL;
  return box->pcie_replay(d->index, v);
}
int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned* v) {
  FAKE_NVML_BOX_OR_FAIL;
  return box->pcie_gen(d->index, false, v);
}
int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned* v) {
  FAKE_NVML_BOX_OR_FAIL;
  return box->pcie_gen(d->index, true, v);
}
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned* v) {
  FAKE_NVML_BOX_OR_FAIL;
  return box->pcie_width(d->index, false, v);
}
int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned* v) {
  FAKE_NVML_BOX_OR_FAIL;
  return box->pcie_width(d->index, true, v);
}
int nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) {
  FAKE_NVML_BOX_OR_FAIL;
  return box->remapped_rows(d->index, corr, unc, pending, failure);
}
int nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long* v) {
  FAKE_NVML_BOX_OR_FAIL;
  return box->total_ecc(d->index, type, counter, v);
}
int nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int cap, int* status) {
  FAKE_NVML_BOX_OR_FAIL;
  return box->p2p_status(a->index, b->index, cap, status);
}
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* infos) {
  FAKE_NVML_BOX_OR_FAIL;
  const unsigned n = fake_rows(d->index, nullptr, 0, nullptr);
  if (n > *count) { return *count = n, kInsufficientSize; }
  *count = fake_rows(d->index, infos, *count, nullptr);
  return kSuccess;
}
int nvmlSystemGetProcessName(unsigned pid, char* name, unsigned len) {
  FAKE_NVML_BOX_OR_FAIL;
  for (int g = 0; g < gpu_count(*box); ++g) {
    nvmlProcessInfo_t rows[16];
    char names[16][64];
    const unsigned n = fake_rows(g, rows, 16, names);
    for (unsigned k = 0; k < n && k < 16; ++k) {
      if (rows[k].pid == pid) { return std::snprintf(name, len, "/usr/bin/%s", names[k]), kSuccess; }
    }
  }
  return kNotFound;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  FAKE_NVML_BOX_OR_FAIL;
  u->gpu = fake_rows(d->index, nullptr, 0, nullptr) ? 57 : 0;
  u->memory = 0;
  return kSuccess;
}
}
