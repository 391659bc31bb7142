// Someone else's job, for the busy-GPU tests: copies between every ordered pair of GPUs (peer
// copies when the driver allows them, else through the host; on a one-GPU box, between two
// buffers of that GPU) in a loop for --seconds, as a
// training job's all-reduce would, and says what it did. Read-only to the box: it allocates
// device memory and copies, nothing else.
//   nvcc -O2 -arch=sm_90 -o p2pnode-copy-load tests/gpu/load/copy_load.cu
//   p2pnode-copy-load --seconds 60 [--mib 256]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "copy_load: %s: %s\n", #x, cudaGetErrorString(e_)); \
      return 3;                                                                \
    }                                                                          \
  } while (0)

int main(int argc, char** argv) {
  double seconds = 60;
  std::size_t mib = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seconds")) {
      seconds = std::atof(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--mib")) {
      mib = std::strtoull(argv[i + 1], nullptr, 10);
    }
  }
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 1) {
    std::fprintf(stderr, "copy_load: no GPU\n");
    return 2;
  }
  const std::size_t bytes = mib << 20;
  std::vector<void*> buf(n);
  std::vector<cudaStream_t> stream(n);
  for (int d = 0; d < n; ++d) {
    CK(cudaSetDevice(d));
    for (int p = 0; p < n; ++p) {
      int ok = 0;
      if (p != d && cudaDeviceCanAccessPeer(&ok, d, p) == cudaSuccess && ok) { cudaDeviceEnablePeerAccess(p, 0); }
    }
    cudaGetLastError();
    CK(cudaMalloc(&buf[d], bytes));
    CK(cudaStreamCreate(&stream[d]));
  }
  void* second = nullptr;  // one GPU: the copies go between two of its buffers
  if (n == 1) { CK(cudaMalloc(&second, bytes)); }
  const auto t0 = std::chrono::steady_clock::now();
  unsigned long long copies = 0;
  std::printf("copy_load: pid %d, %d GPUs, %zu MiB per copy, %.0f s\n", static_cast<int>(getpid()), n, mib, seconds);
  std::fflush(stdout);
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
    if (n == 1) {
      CK(cudaMemcpyAsync(second, buf[0], bytes, cudaMemcpyDeviceToDevice, stream[0]));
      ++copies;
    }
    for (int d = 0; d < n; ++d) {
      for (int p = 0; p < n; ++p) {
        if (p != d) {
          CK(cudaMemcpyPeerAsync(buf[p], p, buf[d], d, bytes, stream[d]));
          ++copies;
        }
      }
    }
    for (int d = 0; d < n; ++d) { CK(cudaStreamSynchronize(stream[d])); }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("copy_load: %llu copies in %.1f s, %.1f GB/s in all\n", copies, s, copies * double(bytes) / s / 1e9);
  return 0;
}
