#include "p2pnode/agent/gpu_processes.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "nvml_lib.hpp"
#include "p2pnode/agent/interconnect.hpp"

namespace p2pnode::agent {

namespace {
// The NVML types used, under nvml.h's names (nvml_lib.hpp declares them).
using nvmlReturn_t = nvml::Return;
using nvmlDevice_t = nvml::Device;
using nvmlPciInfo_t = nvml::PciInfo;
using nvmlProcessInfo_t = nvml::ProcessInfo;
using nvmlProcessInfo_v1_t = nvml::ProcessInfoV1;
using nvmlUtilization_t = nvml::Utilization;
using nvml::kSuccess;
constexpr nvmlReturn_t kInsufficientSize = 7;        // NVML_ERROR_INSUFFICIENT_SIZE
constexpr unsigned long long kNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE
constexpr unsigned kMaxProcesses = 256;

std::string proc_comm(unsigned pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string s;
  std::getline(in, s);
  return s;
}
}  // namespace

struct ProcessWatch::Impl {
  nvml::Lib lib;
  std::string reason;
  unsigned exclude_pid = 0;
  std::vector<std::string> bus_ids;
  std::vector<nvmlDevice_t> devices;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*procs)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*procs_v1)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v1_t*) = nullptr;
  nvmlReturn_t (*process_name)(unsigned, char*, unsigned) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;

  template <typename F>
  bool sym(F& f, const char* name) {
    return lib.sym(f, name);
  }
  std::string err(nvmlReturn_t r) const { return lib.err(r); }
  bool fail(std::string why) {
    reason = std::move(why);
    devices.clear();
    return false;
  }

  bool open(const char* library) {
    if (auto why = lib.open(library); !why.empty()) { return fail(why); }
    if (!(sym(count, "nvmlDeviceGetCount_v2") && sym(by_index, "nvmlDeviceGetHandleByIndex_v2") &&
          sym(by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") &&
          (sym(pci_info, "nvmlDeviceGetPciInfo_v3") || sym(pci_info, "nvmlDeviceGetPciInfo_v2")))) {
      return fail(nvml::Lib::missing("the process watch"));
    }
    if (!sym(procs, "nvmlDeviceGetComputeRunningProcesses_v3") &&
        !sym(procs, "nvmlDeviceGetComputeRunningProcesses_v2") &&
        !sym(procs_v1, "nvmlDeviceGetComputeRunningProcesses")) {
      return fail("NVML has no nvmlDeviceGetComputeRunningProcesses");
    }
    sym(process_name, "nvmlSystemGetProcessName");
    sym(utilization, "nvmlDeviceGetUtilizationRates");
    if (auto why = lib.init(); !why.empty()) { return fail(why); }
    if (bus_ids.empty()) {
      unsigned n = 0;
      if (const auto r = count(&n); r != kSuccess) { return fail("nvmlDeviceGetCount failed: " + err(r)); }
      for (unsigned i = 0; i < n; ++i) {
        nvmlDevice_t d = nullptr;
        nvmlPciInfo_t pci;
        std::memset(&pci, 0, sizeof pci);
        if (by_index(i, &d) != kSuccess || pci_info(d, &pci) != kSuccess) {
          continue;  // e.g. a GPU it may not access
        }
        bus_ids.push_back(normalize_bus_id(pci.busId));
        devices.push_back(d);
      }
      return true;
    }
    for (const auto& id : bus_ids) {
      nvmlDevice_t d = nullptr;
      if (const auto r = by_bus_id(id.c_str(), &d); r != kSuccess) {
        return fail("NVML does not know GPU " + id + ": " + err(r));
      }
      devices.push_back(d);
    }
    return true;
  }

  std::string name_of(unsigned pid) const {
    char buf[256] = {};
    if (process_name && process_name(pid, buf, sizeof buf) == kSuccess && buf[0]) {
      std::string n = buf;
      const auto slash = n.rfind('/');  // NVML gives the executable's path
      return slash == std::string::npos ? n : n.substr(slash + 1);
    }
    return proc_comm(pid);
  }

  // One GPU's compute processes; the buffer grows when NVML says it is too small. only_pid: that
  // process alone (even when it is exclude_pid).
  std::vector<GpuProcess> on(std::size_t i, unsigned only_pid = 0) {
    std::vector<GpuProcess> out;
    unsigned n = 16;
    for (;;) {
      unsigned got = n;
      std::vector<std::pair<unsigned, unsigned long long>> rows;
      nvmlReturn_t r;
      if (procs) {
        std::vector<nvmlProcessInfo_t> buf(n);
        r = procs(devices[i], &got, buf.data());
        for (unsigned k = 0; r == kSuccess && k < got && k < n; ++k) {
          rows.emplace_back(buf[k].pid, buf[k].usedGpuMemory);
        }
      } else {
        std::vector<nvmlProcessInfo_v1_t> buf(n);
        r = procs_v1(devices[i], &got, buf.data());
        for (unsigned k = 0; r == kSuccess && k < got && k < n; ++k) {
          rows.emplace_back(buf[k].pid, buf[k].usedGpuMemory);
        }
      }
      if (r == kInsufficientSize && got > n && got <= kMaxProcesses) {
        n = got;
        continue;
      }
      for (const auto& [pid, mem] : rows) {
        if (pid == 0 || (only_pid != 0 ? pid != only_pid : pid == exclude_pid)) { continue; }
        out.push_back({bus_ids[i], pid, name_of(pid), mem == kNotAvailable ? 0 : mem});
      }
      break;
    }
    std::sort(out.begin(), out.end(), [](const GpuProcess& a, const GpuProcess& b) { return a.pid < b.pid; });
    return out;
  }
};

ProcessWatch::ProcessWatch(std::vector<std::string> bus_ids, unsigned exclude_pid, const char* library)
    : impl_(std::make_unique<Impl>()) {
  impl_->bus_ids = std::move(bus_ids);
  impl_->exclude_pid = exclude_pid;
  impl_->open(library);
}

ProcessWatch::~ProcessWatch() = default;

bool ProcessWatch::available() const { return impl_->reason.empty(); }
const std::string& ProcessWatch::reason() const { return impl_->reason; }
const std::vector<std::string>& ProcessWatch::gpus() const { return impl_->bus_ids; }

std::vector<GpuProcess> ProcessWatch::sample() {
  std::vector<GpuProcess> all;
  if (!available()) { return all; }
  for (std::size_t i = 0; i < impl_->devices.size(); ++i) {
    auto on = impl_->on(i);
    all.insert(all.end(), on.begin(), on.end());
  }
  return all;
}

std::vector<std::optional<std::uint64_t>> ProcessWatch::own_memory(unsigned pid) {
  std::vector<std::optional<std::uint64_t>> out;
  if (!available() || pid == 0) { return out; }
  for (std::size_t i = 0; i < impl_->devices.size(); ++i) {
    const auto rows = impl_->on(i, pid);
    if (rows.empty() || rows.front().used_memory_bytes == 0) {
      out.emplace_back(std::nullopt);
    } else {
      out.emplace_back(rows.front().used_memory_bytes);
    }
  }
  return out;
}

std::vector<GpuLoad> ProcessWatch::load() {
  std::vector<GpuLoad> out;
  if (!available()) { return out; }
  for (std::size_t i = 0; i < impl_->devices.size(); ++i) {
    GpuLoad l{impl_->bus_ids[i], std::nullopt};
    nvmlUtilization_t u{};
    if (impl_->utilization && impl_->utilization(impl_->devices[i], &u) == kSuccess) { l.utilization_percent = u.gpu; }
    out.push_back(std::move(l));
  }
  return out;
}

nlohmann::json to_json(const GpuProcess& p) {
  return {{"gpu", p.gpu}, {"pid", p.pid}, {"name", p.name}, {"used_memory_bytes", p.used_memory_bytes}};
}

nlohmann::json to_json(const std::vector<GpuProcess>& ps) {
  auto a = nlohmann::json::array();
  for (const auto& p : ps) { a.push_back(to_json(p)); }
  return a;
}

nlohmann::json processes_document(ProcessWatch& watch, const std::string& agent_version) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& l : watch.load()) {
    gpus.push_back(
        {{"pci_bus_id", l.gpu},
         {"utilization_percent", l.utilization_percent ? nlohmann::json(*l.utilization_percent) : nlohmann::json()}});
  }
  return {{"schema_version", 1},
          {"kind", "gpu_processes"},
          {"agent", {{"name", "p2pnode-agent"}, {"version", agent_version}}},
          {"source", watch.available() ? "nvml" : "none"},
          {"reason", watch.available() ? nlohmann::json() : nlohmann::json(watch.reason())},
          {"gpus", std::move(gpus)},
          {"processes", to_json(watch.sample())}};
}

}  // namespace p2pnode::agent
