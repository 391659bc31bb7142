#include "judge/expectations.hpp"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "core/link_rate.hpp"
#include "judge/interconnect.hpp"
#include "pci/expectation.hpp"

namespace p2pnode::judge {

namespace {
using json = nlohmann::json;

struct CaseKind {
  const char* key;
  const char* engine;
  const char* direction;
  CopyKind copy;
};
constexpr CaseKind kPairCases[] = {
    {"ce_write_bandwidth", "ce", "write", CopyKind::ce},
    {"ce_read_bandwidth", "ce", "read", CopyKind::ce},
    {"ce_bidir_bandwidth", "ce", "bidirectional", CopyKind::bidirectional},
    {"sm_write_bandwidth", "sm", "write", CopyKind::sm},
    {"sm_read_bandwidth", "sm", "read", CopyKind::sm},
};

// A single CPU core writes through the BAR mapping: past PCIe 3.0 x16 the link is no longer what
// limits it, and nothing here measured a faster box, so the expectation stops at the lowest
// healthy figure known (seed 004: 6 GB/s). It still tells a write-combined mapping (GB/s) from an
// uncached one (tens to hundreds of MB/s, as the reads).
constexpr double kBarWriteCapGbps = 6.0;

// A GPU the inventory lacks (the document came from another box, or sysfs was unreadable):
// what the document says of its PCIe link.
PciDevice from_document(const AgentResult& r, int index) {
  PciDevice d;
  const AgentDevice* a = r.device(index);
  d.bdf = a ? a->pci_bus_id : "gpu" + std::to_string(index);
  d.kind = DeviceKind::gpu;
  if (!a || !r.raw.is_object()) { return d; }
  const auto& devs = r.raw.value("devices", json::array());
  if (static_cast<std::size_t>(index) >= devs.size()) { return d; }
  const json link = devs[static_cast<std::size_t>(index)].value("pcie_link", json());
  if (link.is_object()) {
    if (link.contains("current_speed_gts") && link["current_speed_gts"].is_number()) {
      d.link.current_gts = link["current_speed_gts"].get<double>();
    }
    if (link.contains("current_width") && link["current_width"].is_number_integer()) {
      d.link.current_width = link["current_width"].get<int>();
    }
  }
  return d;
}
}  // namespace

void merge_interconnects(Inventory& inv, const AgentResult& r) { (void)merge_agent_interconnect(inv, r.raw); }

void merge_interconnects(Inventory& inv, const nlohmann::json& doc) { (void)merge_agent_interconnect(inv, doc); }

std::optional<double> CellExpectation::ratio() const {
  if (!expected_gbps || *expected_gbps <= 0) { return std::nullopt; }
  return measured_gbps / *expected_gbps;
}

std::string CellExpectation::key() const {
  return case_key + (direction == "h2d" || direction == "d2h" ? "/" + direction : "") + " " + gpu +
         (peer_gpu.empty() ? "" : "->" + peer_gpu);
}

std::vector<CellExpectation> expectations(const AgentResult& r, const Inventory& inv) {
  std::vector<CellExpectation> out;
  auto device = [&](int i, PciDevice& scratch) -> const PciDevice* {
    const AgentDevice* a = r.device(i);
    if (a) {
      if (const PciDevice* d = inv.find(a->pci_bus_id)) { return d; }
    }
    scratch = from_document(r, i);
    return &scratch;
  };
  for (const auto& c : r.cases) {
    const CaseKind* kind = nullptr;
    for (const auto& k : kPairCases) {
      if (c.key == k.key) { kind = &k; }
    }
    for (const auto& cell : c.cells) {
      if (kind && cell.src && cell.dst && cell.bandwidth_gbps) {
        PciDevice sa, sb;
        const PciDevice *a = device(*cell.src, sa), *b = device(*cell.dst, sb);
        CellExpectation e;
        e.case_key = c.key;
        e.src = *cell.src;
        e.dst = *cell.dst;
        e.gpu = a->bdf;
        e.peer_gpu = b->bdf;
        e.engine = kind->engine;
        e.direction = kind->direction;
        e.link = pci::pair_link(*a, *b, inv);
        e.measured_gbps = *cell.bandwidth_gbps;
        if (auto ceil = pci::pair_ceiling(*a, *b, inv)) {
          const auto x = pci::expect(*ceil, kind->copy);
          e.ceiling_gbps = ceil->gbps;
          e.expected_gbps = x.expected_gbps;
          e.efficiency = x.efficiency;
          e.narrowest = ceil->narrowest;
        }
        out.push_back(std::move(e));
      }
      // Copies over the GPU's own PCIe link: the copy engine's (host_device_bandwidth) and the CPU's
      // through the BAR mapping (bar_copy). Uncached CPU loads wait for each read's completion:
      // their figure is the round trip's, not the link's, so they carry no expectation.
      const bool bar = c.key == "bar_copy";
      if ((bar || c.key == "host_device_bandwidth") && cell.gpu) {
        PciDevice sg;
        const PciDevice* g = device(*cell.gpu, sg);
        const auto ceil = pci::host_ceiling(*g, inv);
        const std::optional<CopyKind> h2d_kind = bar ? CopyKind::bar_write : CopyKind::ce;
        const std::optional<CopyKind> d2h_kind = bar ? std::nullopt : std::optional(CopyKind::ce);
        for (const auto& [dir, v, copy] : {std::tuple{"h2d", bar ? cell.bar_write_gbps : cell.h2d_gbps, h2d_kind},
                                           {"d2h", bar ? cell.bar_read_gbps : cell.d2h_gbps, d2h_kind}}) {
          if (!v) { continue; }
          CellExpectation e;
          e.case_key = c.key;
          e.src = *cell.gpu;
          e.gpu = g->bdf;
          e.engine = bar ? "cpu" : "ce";
          e.direction = dir;
          e.link = "PCIe";
          e.measured_gbps = *v;
          if (ceil && copy) {
            const auto x = pci::expect(*ceil, *copy);
            e.ceiling_gbps = ceil->gbps;
            e.expected_gbps = bar ? std::min(x.expected_gbps, kBarWriteCapGbps) : x.expected_gbps;
            e.efficiency = x.efficiency;
            e.narrowest = ceil->narrowest;
          }
          out.push_back(std::move(e));
        }
      }
    }
  }
  return out;
}

json to_json(const CellExpectation& e) {
  auto round3 = [](double v) { return static_cast<double>(static_cast<long long>(v * 1000 + 0.5)) / 1000; };
  json j = {{"case", e.case_key},
            {"gpu", e.gpu},
            {"peer_gpu", e.peer_gpu.empty() ? json() : json(e.peer_gpu)},
            {"engine", e.engine},
            {"direction", e.direction},
            {"link", e.link},
            {"measured_gbps", round3(e.measured_gbps)},
            {"ceiling_gbps", e.ceiling_gbps ? json(round3(*e.ceiling_gbps)) : json()},
            {"expected_gbps", e.expected_gbps ? json(round3(*e.expected_gbps)) : json()},
            {"ratio", e.ratio() ? json(round3(*e.ratio())) : json()},
            {"narrowest_link", e.narrowest.empty() ? json() : json(e.narrowest)}};
  return j;
}

}  // namespace p2pnode::judge
