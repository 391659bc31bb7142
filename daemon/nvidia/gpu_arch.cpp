#include "nvidia/gpu_arch.hpp"

#include <array>
#include <cstdio>

namespace p2pnode::nvidia {
namespace {
// Device-id ranges: the "Compatible GPUs" table of open-gpu-kernel-modules 565.57.01 (its README,
// every id of Turing to Ada falls in one range below; checked against ../trees), and the GB20x ids
// (0x2b85 RTX 5090, 0x2c02 RTX 5080, 0x2bb1 RTX PRO 6000) that 565 does not list.
// First branches: the open modules begin at 515 (Turing, Ampere); Ada launched on 520.56.06; Hopper
// is driven by 525.60.13's data-center release; Blackwell (consumer and B200) needs 570 (the RTX 5090
// launched on 570.86.16; tinygrad#29 asks 565.57.01-p2p for it in vain).
constexpr std::array<GpuArch, 7> kArchs{{
    {"Turing (TU10x/TU11x)", "RTX 2080 Ti 0x1e07, TITAN RTX 0x1e02, T4 0x1eb8",
     {{0x1e00, 0x1fff}, {0x2180, 0x21ff}, {0, 0}}, 515, "515.43.04",
     "no P2P branch reports it: GeForce Turing has no large BAR, so the P2P patch cannot map its VRAM"},
    {"Ampere (GA100)", "A100 0x20b0/0x20b2/0x20b5/0x20f1",
     {{0x20b0, 0x20ff}, {0, 0}, {0, 0}}, 515, "515.43.04",
     "peer-to-peer is native on data-center GPUs; no patched branch is needed"},
    {"Hopper (GH100)", "H100 0x2330/0x2331, H200 0x2335, GH200 0x2342",
     {{0x2300, 0x23ff}, {0, 0}, {0, 0}}, 525, "525.60.13",
     "peer-to-peer is native on data-center GPUs; no patched branch is needed"},
    {"Ampere (GA10x)", "RTX 3090 0x2204, RTX 3090 Ti 0x2203, RTX A6000 0x2230",
     {{0x2200, 0x22ff}, {0x2400, 0x25ff}, {0, 0}}, 515, "515.43.04",
     "tinygrad 550.54.15-p2p to 565.57.01-p2p work on 3090s with large BAR (tinygrad#3: \"working well on 3090s\"); "
     "on X570 boards the peer address is 4 MiB into BAR1 and the 512 MiB alignment check fails "
     "(tinygrad PR#48, dual 3090 on an X570 Taichi)"},
    {"Ada (AD10x)", "RTX 4090 0x2684, RTX 4090 D 0x2685, RTX 6000 Ada 0x26b1",
     {{0x2680, 0x28ff}, {0, 0}, {0, 0}}, 520, "520.56.06",
     "the P2P patch's primary target: tinygrad 550.54.15-p2p, 550.90.07-p2p, 565.57.01-p2p, 570.*-p2p; "
     "aikitoria's fork 570-595; mixed Ada models do not peer (tinygrad#28, 4090 + 4060 Ti)"},
    {"Blackwell (GB10x)", "B200 0x2901",
     {{0x2900, 0x29ff}, {0, 0}, {0, 0}}, 570, "570.124.06",
     "peer-to-peer is native on data-center GPUs; no patched branch is needed"},
    {"Blackwell (GB20x)", "RTX 5090 0x2b85, RTX 5080 0x2c02, RTX PRO 6000 0x2bb1",
     {{0x2b80, 0x2fff}, {0, 0}, {0, 0}}, 570, "570.86.16",
     "tinygrad 570.148.08-p2p installs but leaves P2P disabled on 8x 5090 (tinygrad#42, #35); aikitoria's fork "
     "(570-595 branches) drives it (aikitoria#10, #15); 5090s come up without large BAR unless the BIOS enables it; on AM5 the peer "
     "address is 4 MiB into BAR1 and trees with the 512 MiB alignment check fail (tinygrad#44)"},
}};

bool in(const IdRange& r, std::uint16_t id) { return r.last != 0 && id >= r.first && id <= r.last; }
}  // namespace

const GpuArch* find_gpu_arch(std::uint16_t device_id) {
  for (const auto& a : kArchs)
    for (const auto& r : a.ids)
      if (in(r, device_id)) return &a;
  return nullptr;
}

int driver_branch(std::string_view version) {
  int n = 0;
  std::size_t i = 0;
  for (; i < version.size() && version[i] >= '0' && version[i] <= '9' && n < 100000; ++i) n = n * 10 + (version[i] - '0');
  return i == 0 ? 0 : n;
}

std::optional<std::string> branch_cannot_drive(std::uint16_t device_id, std::string_view version) {
  const GpuArch* a = find_gpu_arch(device_id);
  const int branch = driver_branch(version);
  if (!a || branch == 0 || branch >= a->first_branch) return std::nullopt;
  char id[8];
  std::snprintf(id, sizeof id, "%04x", device_id);
  return "driver " + std::string(version) + " (branch " + std::to_string(branch) + ") cannot drive 10de:" + id +
         ", a " + std::string(a->name) + " GPU: the first branch that supports it is " + std::to_string(a->first_branch) +
         " (e.g. " + std::string(a->first_release) + ")";
}

std::vector<std::string> gpus_not_driven(const Inventory& inv, std::string_view version) {
  std::vector<std::string> out;
  for (const auto* g : inv.gpus())
    if (auto why = branch_cannot_drive(g->device, version)) out.push_back(g->bdf + ": " + *why);
  return out;
}

}  // namespace p2pnode::nvidia
