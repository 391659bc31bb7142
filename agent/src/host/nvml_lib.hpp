// libnvidia-ml.so.1 opened at run time, shared by the agent's three NVML readers (interconnect,
// process watch, health): the handle, nvmlInit/nvmlShutdown, error strings, and the NVML types
// they use as nvml.h declares them (ABI stable since driver 346). Each reader resolves the entry
// points it needs with sym(). Internal to the host library.
#pragma once

#include <dlfcn.h>

#include <string>

namespace p2pnode::agent::nvml {

using Return = int;
using Device = struct nvmlDevice_st*;
struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
// nvmlProcessInfo_t (pid, usedGpuMemory, gpuInstanceId, computeInstanceId): what the _v2 and _v3
// process queries fill; the first version (nvmlDeviceGetComputeRunningProcesses) fills the
// two-field nvmlProcessInfo_v1_t.
struct ProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
struct Utilization {
  unsigned int gpu, memory;
};
constexpr Return kSuccess = 0;
constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

class Lib {
 public:
  Lib() = default;
  Lib(const Lib&) = delete;
  Lib& operator=(const Lib&) = delete;
  ~Lib() {
    if (lib_) {
      if (inited_ && shutdown_) { shutdown_(); }
      dlclose(lib_);
    }
  }
  // dlopen and the init/shutdown/error entry points: empty, or why not ("NVML not available: …").
  std::string open(const char* library) {
    lib_ = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      const char* e = dlerror();
      return std::string("NVML not available: ") + (e ? e : std::string(library) + " not found");
    }
    if (!sym(init_, "nvmlInit_v2") || !sym(shutdown_, "nvmlShutdown") || !sym(error_string_, "nvmlErrorString")) {
      return missing("nvmlInit_v2, nvmlShutdown or nvmlErrorString");
    }
    return {};
  }
  // nvmlInit: empty, or "nvmlInit failed: …". nvmlShutdown follows in the destructor.
  std::string init() {
    if (const auto r = init_(); r != kSuccess) { return "nvmlInit failed: " + err(r); }
    inited_ = true;
    return {};
  }
  template <typename F>
  bool sym(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib_, name));
    return f != nullptr;
  }
  // "NVML lacks a function …": after a required sym() failed.
  static std::string missing(const std::string& what) {
    const char* e = dlerror();
    return "NVML lacks a function " + what + " needs (" + (e ? e : "dlsym") + ")";
  }
  std::string err(Return r) const {
    return error_string_ ? std::string(error_string_(r)) + " (" + std::to_string(r) + ")"
                         : "error " + std::to_string(r);
  }

 private:
  void* lib_ = nullptr;
  bool inited_ = false;
  Return (*init_)() = nullptr;
  Return (*shutdown_)() = nullptr;
  const char* (*error_string_)(Return) = nullptr;
};

}  // namespace p2pnode::agent::nvml
