#include "judge/peer_denied.hpp"

#include "core/units.hpp"
#include "nvidia/gpu_table.hpp"
#include "pci/topology.hpp"

namespace p2pnode::judge {

namespace {
bool is_geforce(const AgentDevice& a, const PciDevice* p) {
  if (a.name.find("GeForce") != std::string::npos) { return true; }
  if (!p) { return false; }
  auto m = nvidia::find_gpu_model(p->device);
  return m && m->name.find("GeForce") != std::string_view::npos;
}

const PciDevice* host_bridge_of(const PciDevice& d, const Inventory& inv) {
  for (const auto& h : inv.devices) {
    if (h.kind == DeviceKind::host_bridge && h.root_complex == d.root_complex) { return &h; }
  }
  return nullptr;
}

std::string status_of(const AgentPairLink* l, const char* cap) {
  if (!l) { return {}; }
  auto it = l->p2p_status.find(cap);
  return it == l->p2p_status.end() ? std::string() : it->second;
}
}  // namespace

std::vector<std::string> explain_denied_peer_access(const AgentResult& r, int src, int dst, const Inventory& inv) {
  std::vector<std::string> why;
  const AgentDevice *a = r.device(src), *b = r.device(dst);
  if (!a || !b) { return why; }
  const PciDevice *pa = inv.find(a->pci_bus_id), *pb = inv.find(b->pci_bus_id);
  const AgentPairLink* link = r.pair_link(src, dst);
  const std::string nvml_read = status_of(link, "read"), nvml_write = status_of(link, "write");
  auto nvml_says = [&](const char* s) { return nvml_read == s || nvml_write == s; };
  const bool nvml_ok = nvml_read == "ok" && nvml_write == "ok";

  if (a->name != b->name || (pa && pb && pa->device != pb->device)) {
    why.push_back("mixed models (" + a->name + " and " + b->name +
                  "): the driver enables peer access only between GPUs of one model");
  }
  if (inv.iommu.mode == IommuMode::translating) {
    why.push_back(
        "the IOMMU translates DMA: peer writes to the other GPU's BAR are remapped or blocked "
        "(set iommu=pt, or turn the IOMMU off)");
  }
  for (const auto* p : {pa, pb}) {
    if (!p) { continue; }
    const Bar* ap = p->vram_aperture();
    const auto model = nvidia::find_gpu_model(p->device);
    if (model && (!ap || ap->size() < model->vram)) {
      why.push_back("no large BAR on " + p->bdf + ": its VRAM aperture is " +
                    (ap ? format_size(ap->size()) : std::string("missing")) + ", below its " +
                    format_size(model->vram) + " of VRAM (enable Above 4G Decoding and Resizable BAR)");
    }
  }
  if (is_geforce(*a, pa) && is_geforce(*b, pb) && !nvml_ok && (nvml_says("gpu_not_supported") || nvml_read.empty())) {
    why.push_back(std::string("GeForce GPUs: NVIDIA's stock driver does not enable P2P on GeForce") +
                  (nvml_says("gpu_not_supported") ? " (NVML: gpu_not_supported)" : "") +
                  "; the P2P-patched open kernel module is needed (profile driver.kernel_module)");
  }
  if (pa && pb) {
    const auto cls = pci::classify_pair(*pa, *pb);
    const bool switch_between = cls == pci::PairClass::pix || cls == pci::PairClass::pxb;
    const PciDevice *ha = host_bridge_of(*pa, inv), *hb = host_bridge_of(*pb, inv);
    const bool intel = ha && ha->vendor == 0x8086 && (!hb || hb->vendor == 0x8086);
    const bool no_nvlink = !link || link->nvlinks == 0;
    if (intel && !switch_between && no_nvlink && !nvml_ok) {
      why.push_back(
          std::string("Intel root complex with no PCIe switch between the GPUs (") + pci::to_string(cls) +
          "): the driver refuses P2P through Intel root ports" +
          (nvml_says("chipset_not_supported") || nvml_says("ioh_topology_not_supported")
               ? " (NVML: " + (nvml_read.empty() ? nvml_write : nvml_read) + ", CNS in nvidia-smi topo -p2p r)"
               : "") +
          "; put both GPUs under one PCIe switch");
    }
  }
  if (why.empty() && !nvml_read.empty() && !nvml_ok) {
    why.push_back("NVML reports P2P read " + nvml_read + ", write " + nvml_write);
  }
  return why;
}

std::optional<std::string> nvml_cuda_disagreement(const AgentResult& r, int src, int dst, bool cuda_allows) {
  const AgentPairLink* link = r.pair_link(src, dst);
  const std::string read = status_of(link, "read"), write = status_of(link, "write");
  if (read.empty() || write.empty()) { return std::nullopt; }
  const bool nvml_ok = read == "ok" && write == "ok";
  if (nvml_ok == cuda_allows) { return std::nullopt; }
  const std::string nvml =
      "NVML reports P2P read " + read + ", write " + write + " for this pair (what nvidia-smi topo -p2p shows)";
  return cuda_allows
             ? nvml + ", yet CUDA allows peer access and the self-test's copies ran: the self-test's word decides"
             : nvml + ", yet CUDA does not allow peer access (cudaDeviceCanAccessPeer 0): the self-test's word decides";
}

}  // namespace p2pnode::judge
