// bar_copy: the CPU copies to and from GPU memory through gdrcopy's BAR mapping, per GPU. The
// backend and the library are decided here from what the box offers (bar/bar_copy.hpp says
// how); the measurement itself is host code (src/bar/bar_copy.cpp) over the mapping gdrcopy gives
// and the copy engine as the reference.
#include <cuda.h>

#include "agent.hpp"
#include "p2pnode/agent/bar/bar_copy.hpp"
#include "p2pnode/agent/bar/gdrapi.hpp"

namespace p2pnode::agent {
namespace {

using PointerSetAttribute = CUresult (*)(const void*, CUpointer_attribute, CUdeviceptr);
using DeviceGetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);

template <typename F>
F driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    return nullptr;
  }
  return reinterpret_cast<F>(fn);
}

bar::Environment environment(const Agent& a) {
  bar::Environment env;
  bar::read_gdrdrv(env, "");
  cudaDriverGetVersion(&env.driver_version);
  if (auto get = driver_entry<DeviceGetAttribute>("cuDeviceGetAttribute")) {
    for (int g = 0; g < a.gpu_count(); ++g) {
      int v = 0;
      if (get(&v, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, a.gpu_ordinal(g)) == CUDA_SUCCESS && v) {
        env.dma_buf_supported = true;
      }
    }
  }
  return env;
}

const std::vector<std::string>& library_names(const Agent& a) {
  return a.opt().gdrapi.empty() ? bar::default_library_names() : a.opt().gdrapi;
}

// Waived when neither backend is there. Where the library is, it is asked too (gdr_open tries
// gdrdrv, then dma-buf), so a backend this agent does not foresee still runs; the reason says
// whether the library is there, so that an operator sees every missing half at once.
std::string bar_filter(const Agent& a) {
  const bar::Environment env = environment(a);
  const std::string why = bar::no_backend_reason(env);
  bar::GdrApi api;
  if (auto lib_error = api.open(library_names(a)); !lib_error.empty()) {
    return (why.empty() ? std::string() : why + "; ") + lib_error +
           " (gdrcopy's user-space library libgdrapi.so.2: p2pnode builds it from the profile's gdrcopy source, or "
           "gdrcopy's packages install it; --gdrapi names one)";
  }
  if (bar::GdrHandle g = api.gdr_open()) {
    api.gdr_close(g);
    return {};
  }
  return why.empty()
             ? std::string()
             : why + "; libgdrapi " + api.version() + " (" + api.path() + ") agrees: its gdr_open found no backend";
}

// One GPU: a 64 KiB-aligned buffer, pinned and mapped, measured and checked.
Cell run_one(Agent& a, const bar::GdrApi& api, bar::GdrHandle g, int gpu, const std::string& backend) {
  a.set_device(gpu);
  const std::size_t bytes = a.opt().bar_size_bytes;
  char* raw = nullptr;
  CK(cudaMalloc(reinterpret_cast<void**>(&raw), bytes + bar::kGpuPageBytes));
  std::unique_ptr<char, void (*)(char*)> hold(raw, [](char* p) { cudaFree(p); });
  const auto base = (reinterpret_cast<std::uintptr_t>(raw) + bar::kGpuPageBytes - 1) & ~(bar::kGpuPageBytes - 1);
  char* dev = reinterpret_cast<char*>(base);
  // Every synchronous copy on this buffer waits for work in flight on it, as gdrcopy's own tests set.
  if (auto set = driver_entry<PointerSetAttribute>("cuPointerSetAttribute")) {
    unsigned one = 1;
    set(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, static_cast<CUdeviceptr>(base));
  }
  bar::Mapping m(api, g);
  if (auto why = m.map(base, bytes); !why.empty()) { throw std::runtime_error(why); }
  const bar::GdrMemHandle mh = m.handle();
  char* cpu = m.cpu();
  bar::Window w;
  w.bytes = bytes;
  w.write = [&api, mh, cpu](std::size_t off, const void* src, std::size_t n) {
    if (int rc = api.gdr_copy_to_mapping(mh, cpu + off, src, n); rc != 0) {
      throw std::runtime_error("gdr_copy_to_mapping returned " + std::to_string(rc));
    }
  };
  w.read = [&api, mh, cpu](void* dst, std::size_t off, std::size_t n) {
    if (int rc = api.gdr_copy_from_mapping(mh, dst, cpu + off, n); rc != 0) {
      throw std::runtime_error("gdr_copy_from_mapping returned " + std::to_string(rc));
    }
  };
  bar::Reference ref;
  ref.upload = [dev, bytes](const void* src) { CK(cudaMemcpy(dev, src, bytes, cudaMemcpyHostToDevice)); };
  ref.download = [dev, bytes](void* dst) { CK(cudaMemcpy(dst, dev, bytes, cudaMemcpyDeviceToHost)); };
  bar::Plan plan;
  plan.iterations = a.opt().iterations;
  plan.seed = mix32(a.seed(), static_cast<std::uint64_t>(gpu), 7);
  const bar::Figures f = bar::measure(w, ref, plan);
  Cell c =
      bar::make_cell(gpu, f, backend, bar::mapping_type_name(m.info().mapping_type), api.path() + " " + api.version());
  if (const auto link = read_link_info("/sys", bdf_string(a.gpu(gpu).prop))) {
    c.numbers.emplace_back("link_theoretical_gbps", link->theoretical_gbps);
  }
  return c;
}

}  // namespace

void run_bar_copy(Agent& a, CaseResult& cr) {
  cr.shape = CellShape::gpu;
  cr.matrix_keys = {"bar_write_bandwidth_gbps", "bar_read_bandwidth_gbps"};
  auto fail_all = [&](const std::string& why) {
    a.run_gpu_cells(cr, [&](int, Cell&) { throw std::runtime_error(why); });
  };
  bar::GdrApi api;
  if (auto why = api.open(library_names(a)); !why.empty()) { return fail_all(why); }
  const std::string expected = bar::expected_backend(environment(a));
  bar::GdrHandle g = api.gdr_open();
  if (!g) {
    return fail_all("gdr_open failed although " +
                    (expected == "gdrdrv" ? std::string("/dev/gdrdrv opens") : "the driver offers dma-buf") + ": " +
                    api.path() + " " + api.version() + " and gdrdrv disagree (GDRCOPY_ENABLE_LOGGING=1 says why)");
  }
  std::unique_ptr<bar::gdr, int (*)(bar::GdrHandle)> close(g, api.gdr_close);
  int dma_buf = 0;
  const std::string backend =
      api.gdr_get_attribute && api.gdr_get_attribute(g, bar::kGdrAttrUsingDmaBufMmap, &dma_buf) == 0 && dma_buf
          ? "dma-buf"
          : "gdrdrv";
  a.run_gpu_cells(cr, [&](int gpu, Cell& c) { c = run_one(a, api, g, gpu, backend); });
}

std::string bar_copy_filter(const Agent& a) { return bar_filter(a); }

}  // namespace p2pnode::agent
