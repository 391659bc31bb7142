#include "nvidia/gpu_table.hpp"

#include <array>

namespace p2pnode::nvidia {
namespace {
constexpr std::array<GpuModel, 22> kModels{{
    {0x2204, "GeForce RTX 3090", 24 * GiB},
    {0x2203, "GeForce RTX 3090 Ti", 24 * GiB},
    {0x2208, "GeForce RTX 3080 Ti", 12 * GiB},
    {0x2684, "GeForce RTX 4090", 24 * GiB},
    {0x2685, "GeForce RTX 4090 D", 24 * GiB},
    {0x2704, "GeForce RTX 4080", 16 * GiB},
    {0x2803, "GeForce RTX 4060 Ti 8GB", 8 * GiB},
    {0x2805, "GeForce RTX 4060 Ti 16GB", 16 * GiB},
    {0x2b85, "GeForce RTX 5090", 32 * GiB},
    {0x2c02, "GeForce RTX 5080", 16 * GiB},
    {0x2230, "RTX A6000", 48 * GiB},
    {0x26b1, "RTX 6000 Ada Generation", 48 * GiB},
    {0x2bb1, "RTX PRO 6000 Blackwell", 96 * GiB},
    {0x2236, "A10", 24 * GiB},
    {0x20b0, "A100-SXM4-40GB", 40 * GiB},
    {0x20b2, "A100-SXM4-80GB", 80 * GiB},
    {0x20b5, "A100 80GB PCIe", 80 * GiB},
    {0x20f1, "A100-PCIE-40GB", 40 * GiB},
    {0x2330, "H100 80GB HBM3", 80 * GiB},
    {0x2331, "H100 PCIe", 80 * GiB},
    {0x2335, "H200", 144 * GiB},
    {0x233b, "H200 NVL", 144 * GiB},
}};
}  // namespace

std::optional<GpuModel> find_gpu_model(std::uint16_t device_id) {
  for (const auto& m : kModels) {
    if (m.device_id == device_id) { return m; }
  }
  return std::nullopt;
}

}  // namespace p2pnode::nvidia
