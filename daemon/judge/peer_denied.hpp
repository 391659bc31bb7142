#pragma once
// Why the driver refused peer access for a pair, where the evidence allows a cause: mixed GPU
// models, an IOMMU that translates, a VRAM aperture (BAR1) smaller than VRAM, the stock driver on
// GeForce (NVIDIA enables P2P only on data-center and workstation GPUs; the patched open module
// lifts that), an Intel root complex with no PCIe switch between the GPUs (the driver refuses P2P
// through Intel root ports: `nvidia-smi topo -p2p r` shows CNS there). The agent's NVML P2P status
// (chipset_not_supported, gpu_not_supported, …) corroborates or rules out the last two.
#include <optional>
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "judge/agent_result.hpp"

namespace p2pnode::judge {

// Empty when nothing in the evidence explains the refusal.
std::vector<std::string> explain_denied_peer_access(const AgentResult& r, int src, int dst, const Inventory& inv);

// Where NVML's P2P status for the pair (what `nvidia-smi topo -p2p` shows) and CUDA's
// cudaDeviceCanAccessPeer disagree, the sentence that says so; nullopt where they agree or NVML
// did not answer. CUDA's word is the one the self-test acts on (aikitoria#13: topo said OK for
// pairs CUDA refused).
std::optional<std::string> nvml_cuda_disagreement(const AgentResult& r, int src, int dst, bool cuda_allows);

}  // namespace p2pnode::judge
