// The stand-in NVML's inside: the types as nvml.h declares them (the agent reads these layouts
// through dlopen, so they must match the driver's byte for byte), and what a box is. The entry
// points (nvml.cpp) are the same for every box; a box (one .cpp each) says only what differs:
// its GPUs, its links and counters, its P2P status. A box's answer that its real machine has no
// call for is NVML_ERROR_NOT_SUPPORTED, which is what a driver without the feature says.
#pragma once

#include <vector>

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
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
}

namespace p2pnode::fake_nvml {

// nvmlReturn_t values the boxes give.
constexpr int kSuccess = 0;
constexpr int kUninitialized = 1;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kNotFound = 6;
constexpr int kInsufficientSize = 7;

// A value from the file named by P2PNODE_FAKE_NVML_STATE (`key=value` lines, the last one of a key
// wins), or `fallback`: a test changes what the driver says between two reads by rewriting it.
double state(const char* key, double fallback);

// One machine as NVML shows it. GPU g is index g, its handle g; every call is asked of the box
// P2PNODE_FAKE_NVML_BOX names. What every box answers the same way (count, handles, PCI info,
// processes) the entry points answer from bus_ids alone.
struct Box {
  const char* name = "";             // what P2PNODE_FAKE_NVML_BOX says
  const char* driver_version = "";   // nvmlSystemGetDriverVersion
  std::vector<const char*> bus_ids;  // nvmlDeviceGetPciInfo's busId, NVML's 8-digit domain

  Box() = default;
  Box(const Box&) = delete;
  Box& operator=(const Box&) = delete;
  virtual ~Box() = default;

  virtual const char* gpu_name(int) const { return nullptr; }  // nullptr: not supported
  virtual int link_state(int gpu, unsigned link, int* active) const = 0;
  virtual int link_version(int, unsigned, unsigned*) const { return kNotSupported; }
  virtual int link_remote(int gpu, unsigned link, char* bus_id, unsigned len) const = 0;
  virtual int error_counter(int, unsigned, int, unsigned long long*) const { return kNotSupported; }
  // One field of nvmlDeviceGetFieldValues; nvmlReturn is kSuccess when called.
  virtual void field_value(int, nvmlFieldValue_t& v) const { v.nvmlReturn = kNotSupported; }
  virtual int pcie_replay(int, unsigned*) const { return kNotSupported; }
  virtual int pcie_gen(int, bool /*max*/, unsigned*) const { return kNotSupported; }
  virtual int pcie_width(int, bool /*max*/, unsigned*) const { return kNotSupported; }
  virtual int remapped_rows(int, unsigned*, unsigned*, unsigned*, unsigned*) const { return kNotSupported; }
  virtual int total_ecc(int, int, int, unsigned long long*) const { return kNotSupported; }
  virtual int p2p_status(int a, int b, int cap, int* status) const = 0;
};

// The boxes there are, each defined in its own file.
const Box& h200_nvswitch();
const Box& h200_pair_l40s();
const Box& h100x4();

}  // namespace p2pnode::fake_nvml
