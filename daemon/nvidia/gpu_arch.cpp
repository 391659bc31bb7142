#include "nvidia/gpu_arch.hpp"

#include <algorithm>
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
    {"Turing (TU10x/TU11x)",
     "RTX 2080 Ti 0x1e07, TITAN RTX 0x1e02, T4 0x1eb8",
     {{0x1e00, 0x1fff}, {0x2180, 0x21ff}, {0, 0}},
     515,
     "515.43.04",
     "no P2P branch reports it: GeForce Turing has no large BAR, so the P2P patch cannot map its VRAM"},
    {"Ampere (GA100)",
     "A100 0x20b0/0x20b2/0x20b5/0x20f1",
     {{0x20b0, 0x20ff}, {0, 0}, {0, 0}},
     515,
     "515.43.04",
     "peer-to-peer is native on data-center GPUs; no patched branch is needed"},
    {"Hopper (GH100)",
     "H100 0x2330/0x2331, H200 0x2335, GH200 0x2342",
     {{0x2300, 0x23ff}, {0, 0}, {0, 0}},
     525,
     "525.60.13",
     "peer-to-peer is native on data-center GPUs; no patched branch is needed"},
    {"Ampere (GA10x)",
     "RTX 3090 0x2204, RTX 3090 Ti 0x2203, RTX A6000 0x2230",
     {{0x2200, 0x22ff}, {0x2400, 0x25ff}, {0, 0}},
     515,
     "515.43.04",
     "tinygrad 550.54.15-p2p to 565.57.01-p2p work on 3090s with large BAR (tinygrad#3: \"working well on 3090s\"); "
     "on X570 boards the peer address is 4 MiB into BAR1 and the 512 MiB alignment check fails "
     "(tinygrad PR#48, dual 3090 on an X570 Taichi)"},
    {"Ada (AD10x)",
     "RTX 4090 0x2684, RTX 4090 D 0x2685, RTX 6000 Ada 0x26b1",
     {{0x2680, 0x28ff}, {0, 0}, {0, 0}},
     520,
     "520.56.06",
     "the P2P patch's primary target: tinygrad 550.54.15-p2p, 550.90.07-p2p, 565.57.01-p2p, 570.*-p2p; "
     "aikitoria's fork 570-595; mixed Ada models do not peer (tinygrad#28, 4090 + 4060 Ti)"},
    {"Blackwell (GB10x)",
     "B200 0x2901",
     {{0x2900, 0x29ff}, {0, 0}, {0, 0}},
     570,
     "570.124.06",
     "peer-to-peer is native on data-center GPUs; no patched branch is needed"},
    {"Blackwell (GB20x)",
     "RTX 5090 0x2b85, RTX 5080 0x2c02, RTX PRO 6000 0x2bb1",
     {{0x2b80, 0x2fff}, {0, 0}, {0, 0}},
     570,
     "570.86.16",
     "tinygrad 570.124.06/570.148.08-p2p install but leave P2P disabled on 5090s (tinygrad#42, #44, #35); aikitoria's "
     "570.86.16-p2p is a 4090 tree; its 575.64.05-p2p README is the first to bring P2P to the 5090 (\"P2P for 4090 and "
     "5090\"), its 595.71.05-p2p README adds the RTX PRO 6000 beside 5090s; 5090s come up without large BAR unless the "
     "BIOS enables it; on AM5 the peer address is 4 MiB into BAR1 and trees with the 512 MiB alignment check fail "
     "(tinygrad#44)"},
}};

bool in(const IdRange& r, std::uint16_t id) { return r.last != 0 && id >= r.first && id <= r.last; }
}  // namespace

const GpuArch* find_gpu_arch(std::uint16_t device_id) {
  for (const auto& a : kArchs) {
    for (const auto& r : a.ids) {
      if (in(r, device_id)) { return &a; }
    }
  }
  return nullptr;
}

std::optional<std::string> branch_cannot_drive(std::uint16_t device_id, std::string_view version) {
  const GpuArch* a = find_gpu_arch(device_id);
  const int branch = driver_branch_of(version);
  if (!a || branch == 0 || branch >= a->first_branch) { return std::nullopt; }
  char id[8];
  std::snprintf(id, sizeof id, "%04x", device_id);
  return "driver " + std::string(version) + " (branch " + std::to_string(branch) + ") cannot drive 10de:" + id +
         ", a " + std::string(a->name) + " GPU: the first branch that supports it is " +
         std::to_string(a->first_branch) + " (e.g. " + std::string(a->first_release) + ")";
}

namespace {
// The P2P branch table: the first P2P branch each card peers on, with its source. tinygrad's fork
// (550.54.15-p2p … 570.148.08-p2p; its README: 4090, and 3090s reported in tinygrad#3); aikitoria's
// (570.86.16-p2p README: "NVIDIA driver 570.86.16 with P2P for 4090"; 575.64.05-p2p: "4090 and
// 5090"; 595.71.05-p2p: "RTX 3090, RTX 4090, and RTX 5090", and "different devices of the same
// generation, for example RTX 5090 to RTX PRO 6000 Blackwell", shown with 1 PRO 6000 + 8 5090s);
// GB206 pairs on 580.95.05-p2p (aikitoria#12: four RTX 5060 Ti, every pair CAN access peer).
constexpr std::array<P2pCard, 5> kP2pCards{{
    {"RTX 3090 / GA10x",
     {0x2200, 0x25ff},
     "Ampere",
     "550.54.15",
     "tinygrad's 550.54.15-p2p",
     "the P2P patch starts at tinygrad's 550.54.15-p2p",
     "tinygrad/open-gpu-kernel-modules#3 (\"working well on 3090s\")"},
    {"RTX 4090 / Ada",
     {0x2680, 0x28ff},
     "Ada",
     "550.54.15",
     "tinygrad's 550.54.15-p2p",
     "the P2P patch starts at tinygrad's 550.54.15-p2p",
     "tinygrad's 550.54.15-p2p README (\"P2P for 4090\")"},
    {"RTX PRO 6000 Blackwell",
     {0x2bb0, 0x2bbf},
     "Blackwell",
     "595.71.05",
     "aikitoria's 595.71.05-p2p",
     "aikitoria's 595.71.05-p2p README is the first to list it beside 5090s; on the 580.95.05-p2p line a 5090 and a "
     "PRO "
     "6000 did not peer (aikitoria#12)",
     "aikitoria's 595.71.05-p2p README (1 PRO 6000 + 8 RTX 5090, every pair peering); aikitoria PR #29 (PRO 6000 Max-Q "
     "with 5090s on 610.43.02)"},
    {"RTX 5090 / GB202",
     {0x2b80, 0x2bff},
     "Blackwell",
     "575.64.05",
     "aikitoria's 575.64.05-p2p",
     "aikitoria's 570.86.16-p2p is a 4090 tree (its README: \"P2P for 4090\"), and tinygrad's "
     "570.124.06/570.148.08-p2p "
     "leave 5090 P2P disabled (tinygrad#42, #44)",
     "aikitoria's 575.64.05-p2p README (\"NVIDIA driver 575.64.05 with P2P for 4090 and 5090\")"},
    {"GB206 (RTX 5060 Ti / 5060)",
     {0x2d00, 0x2d7f},
     "Blackwell",
     "580.95.05",
     "aikitoria's 580.95.05-p2p",
     "no branch before aikitoria's 580.95.05-p2p is reported to bring P2P to GB206 cards",
     "aikitoria#12 (four RTX 5060 Ti on 580.95.05-p2p, every pair CAN access peer); a GB206 that drives a display "
     "peers "
     "from 610.43.03-p2p (its README)"},
}};

}  // namespace

// The table is searched in order: the RTX PRO 6000's ids sit inside GB202's range.
const P2pCard* find_p2p_card(std::uint16_t device_id) {
  for (const auto& c : kP2pCards) {
    if (device_id >= c.ids.first && device_id <= c.ids.last) { return &c; }
  }
  return nullptr;
}

std::optional<std::string> branch_cannot_bring_p2p(std::uint16_t device_id, std::string_view version) {
  const P2pCard* c = find_p2p_card(device_id);
  if (!c || driver_branch_of(version) == 0 || compare_driver_versions(version, c->first_p2p) >= 0) {
    return std::nullopt;
  }
  char id[8];
  std::snprintf(id, sizeof id, "%04x", device_id);
  return "the P2P branch of " + std::string(version) + " does not bring P2P to 10de:" + id + " (" +
         std::string(c->name) + "): " + std::string(c->not_before) + "; the first branch that does is " +
         std::string(c->first_branch) + " (" + std::string(c->first_p2p) + " or later)";
}

std::optional<std::string> mixed_generations(const Inventory& inv) {
  std::vector<std::string_view> gens;
  for (const auto* g : inv.gpus()) {
    if (const auto* c = find_p2p_card(g->device);
        c && std::find(gens.begin(), gens.end(), c->generation) == gens.end()) {
      gens.push_back(c->generation);
    }
  }
  if (gens.size() < 2) { return std::nullopt; }
  std::string names;
  for (const auto g : gens) { names += (names.empty() ? "" : " and ") + std::string(g); }
  return "the box mixes GPU generations (" + names +
         "): the patched kernel module alone does not make them peer "
         "across generations; aikitoria's 610.57.04-p2p ships patch-libcuda-p2p.py, which patches libcuda for that "
         "(p2pnode does not apply it), and each card still needs a branch that brings P2P to it";
}

std::vector<std::string> gpus_without_p2p(const Inventory& inv, std::string_view version) {
  std::vector<std::string> out;
  for (const auto* g : inv.gpus()) {
    if (auto why = branch_cannot_bring_p2p(g->device, version)) { out.push_back(g->bdf + ": " + *why); }
  }
  return out;
}

std::vector<std::string> gpus_not_driven(const Inventory& inv, std::string_view version) {
  std::vector<std::string> out;
  for (const auto* g : inv.gpus()) {
    if (auto why = branch_cannot_drive(g->device, version)) { out.push_back(g->bdf + ": " + *why); }
  }
  return out;
}

}  // namespace p2pnode::nvidia
