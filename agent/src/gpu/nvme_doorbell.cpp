// The nvme_doorbell case in p2pnode-agent: the host writer (as p2pnode-nvme-doorbell) and the GPU
// writer: the drive's BAR0 doorbell page, mapped through VFIO, registered with CUDA as I/O memory
// (cudaHostRegisterIoMemory | cudaHostRegisterMapped); a one-thread kernel stores the admin SQ
// tail. The host polls the completion in host memory; the GPU never reads BAR0.
#include <fstream>

#include "agent.hpp"
#include "p2pnode/agent/nvme/gpu_diag.hpp"

namespace p2pnode::agent {
namespace {

constexpr std::uint32_t kDoorbellPage = 0x1000;
constexpr auto kKernelLimit = std::chrono::seconds(2);

std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

bool libcuda_error(cudaError_t e) {
  return e == cudaErrorInsufficientDriver || e == cudaErrorInitializationError || e == cudaErrorNoDevice ||
         e == cudaErrorCallRequiresNewerDriver;
}

class GpuDoorbellWriter final : public nvme::DoorbellWriter {
 public:
  static std::unique_ptr<GpuDoorbellWriter> make(Agent& a, nvme::VfioNvme& dev, int index, std::string& why) {
    std::unique_ptr<GpuDoorbellWriter> w(new GpuDoorbellWriter(a, index));
    a.set_device(index);
    if (dev.bar0() == nullptr || dev.bar0_bytes() < kDoorbellPage + 4096) {
      why = "VFIO gave no mmap of BAR0's doorbell page, which the GPU needs a mapping of to register";
      return nullptr;
    }
    w->host_ = const_cast<std::uint8_t*>(dev.bar0()) + kDoorbellPage;
    // vfio-pci fills a BAR mapping's page tables on first touch; the driver resolves the PFN of
    // the registered range from them, so touch the page from the CPU first. A CPU read of a
    // doorbell returns a vendor-specific value and changes nothing (only GPU reads of a peer BAR
    // are the hazard on AMD root complexes).
    (void)*reinterpret_cast<const volatile std::uint32_t*>(w->host_);
    const cudaError_t e = cudaHostRegister(w->host_, 4096, cudaHostRegisterIoMemory | cudaHostRegisterMapped);
    if (e != cudaSuccess) {
      cudaGetLastError();
      nvme::RegisterFailureFacts f;
      f.cuda_error = cudaGetErrorName(e);
      f.kernel_release = first_line("/proc/sys/kernel/osrelease");
      f.module_version = first_line("/sys/module/nvidia/version");
      f.iommu_translating = !dev.noiommu();
      f.libcuda_missing = libcuda_error(e);
      const auto d = nvme::diagnose_register_failure(f);
      why = d.reason + " [cause: " + d.cause + "]";
      w->host_ = nullptr;
      return nullptr;
    }
    w->registered_ = true;
    void* dptr = nullptr;
    if (const cudaError_t g = cudaHostGetDevicePointer(&dptr, w->host_, 0); g != cudaSuccess) {
      why = std::string("cudaHostGetDevicePointer of the registered doorbell page: ") + cudaGetErrorName(g);
      return nullptr;
    }
    w->dev_ = static_cast<std::uint8_t*>(dptr);
    return w;
  }

  ~GpuDoorbellWriter() override {
    if (registered_) {
      a_.set_device(index_);
      cudaHostUnregister(host_);
    }
  }

  std::string name() const override { return "gpu"; }

  std::string ring(std::uint32_t offset, std::uint32_t value) override {
    if (offset < kDoorbellPage || offset + 4 > kDoorbellPage + 4096) {
      return "doorbell offset outside the registered page";
    }
    a_.set_device(index_);
    cudaStream_t s = a_.gpu(index_).stream[0];
    auto* target = reinterpret_cast<std::uint32_t*>(dev_ + (offset - kDoorbellPage));
    if (cudaError_t e = gpu::launch_doorbell_write(target, value, s); e != cudaSuccess) {
      return std::string("launching the doorbell kernel: ") + cudaGetErrorName(e);
    }
    const auto deadline = Clock::now() + kKernelLimit;
    while (true) {
      const cudaError_t q = cudaStreamQuery(s);
      if (q == cudaSuccess) { return {}; }
      if (q != cudaErrorNotReady) {
        return std::string("the doorbell kernel failed: ") + cudaGetErrorName(q) + " (" + cudaGetErrorString(q) + ")";
      }
      if (Clock::now() >= deadline) { return "the doorbell kernel did not finish within 2 s"; }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

 private:
  GpuDoorbellWriter(Agent& a, int index) : a_(a), index_(index) {}
  Agent& a_;
  int index_;
  std::uint8_t* host_ = nullptr;
  std::uint8_t* dev_ = nullptr;
  bool registered_ = false;
};

}  // namespace

void run_nvme_doorbell(Agent& a, CaseResult& cr) {
  std::vector<nvme::DriveSpec> drives;
  for (const auto& spec : a.opt().nvme) {
    std::string err;
    drives.push_back(*nvme::parse_drive_spec(spec, err));  // validated before the run
  }
  const auto writers = nvme::parse_writers(a.opt().writer).value_or(std::vector<nvme::Writer>{nvme::Writer::host});
  nvme::CaseEnv env;
  env.timing.ready_limit = std::chrono::milliseconds(a.opt().nvme_ready_timeout_ms);
  env.timing.completion_limit = std::chrono::milliseconds(a.opt().nvme_completion_timeout_ms);
  auto factory_for = [&a](nvme::Writer w) -> nvme::WriterFactory {
    if (w == nvme::Writer::host) {
      return [](nvme::VfioNvme& dev, const nvme::DriveSpec&, std::string&) -> std::unique_ptr<nvme::DoorbellWriter> {
        return std::make_unique<nvme::HostDoorbellWriter>(dev);
      };
    }
    return
        [&a](nvme::VfioNvme& dev, const nvme::DriveSpec& d, std::string& why) -> std::unique_ptr<nvme::DoorbellWriter> {
          int index = 0;
          if (!d.pair_gpu.empty()) {
            int ordinal = -1;
            if (cudaDeviceGetByPCIBusId(&ordinal, d.pair_gpu.c_str()) != cudaSuccess || ordinal < 0 ||
                ordinal >= a.gpu_count()) {
              cudaGetLastError();
              why = "GPU " + d.pair_gpu + " (pair_gpu) is not visible to CUDA";
              return nullptr;
            }
            index = ordinal;
          }
          dev.log().push_back("GPU writer: GPU " + std::to_string(index) + " " + a.gpu(index).prop.name + " " +
                              bdf_string(a.gpu(index).prop));
          return GpuDoorbellWriter::make(a, dev, index, why);
        };
  };
  const std::string key = cr.key;
  cr = nvme::run_doorbell_case(drives, writers, factory_for, env);
  cr.key = key;
}

}  // namespace p2pnode::agent
