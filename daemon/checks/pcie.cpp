#include <cstdio>
#include <map>
#include <set>

#include "checks/check.hpp"
#include "core/peers.hpp"
#include "pci/expectation.hpp"
#include "pci/topology.hpp"

namespace p2pnode::checks {

namespace {
std::string gts(double v) {
  char b[48];
  std::snprintf(b, sizeof b, "%g GT/s", v);
  return b;
}
int gen_of(double v) { return v >= 64 ? 6 : v >= 32 ? 5 : v >= 16 ? 4 : v >= 8 ? 3 : v >= 5 ? 2 : 1; }

std::string acs_bits(std::uint16_t ctl) {
  std::string s;
  auto add = [&](std::uint16_t bit, const char* name) {
    if (ctl & bit) { s += (s.empty() ? "" : ", ") + std::string(name); }
  };
  add(0x01, "source validation");
  add(0x04, "P2P request redirect");
  add(0x08, "P2P completion redirect");
  add(0x10, "upstream forwarding");
  add(0x20, "P2P egress control");
  return s.empty() ? "none" : s;
}
}  // namespace

std::vector<Finding> check_pcie_acs(const Profile& p, const Inventory& inv) {
  std::vector<Finding> out;
  const auto pairs = peer_pairs(p, inv);
  std::map<std::string, std::vector<std::string>> bridge_pairs;  // bridge -> pairs it sits between
  for (const auto& [a, b] : pairs) {
    for (const auto& br : pci::bridges_between(*a, *b)) { bridge_pairs[br].push_back(a->bdf + "-" + b->bdf); }
  }
  for (const auto& [bdf, between] : bridge_pairs) {
    const PciDevice* br = inv.find(bdf);
    if (!br || !br->acs || !br->acs->redirects()) { continue; }
    Finding f = make_finding(
        "pcie.acs", bdf, p.platform.acs == AcsPolicy::disabled ? Severity::error : Severity::warning,
        "ACS control 0x" +
            [&] {
              char b[8];
              std::snprintf(b, sizeof b, "%04x", br->acs->control);
              return std::string(b);
            }() +
            " (" + acs_bits(br->acs->control) +
            ") on a bridge between peers: P2P traffic is sent up to the root complex");
    f.observed = {{"acs_control", br->acs->control}, {"acs_offset", br->acs->offset}, {"between", between}};
    f.expected = {{"acs_control_redirect_bits", 0}};
    f.remediation =
        "Clear ACS P2P redirect and egress control on this bridge at every boot: set "
        "platform.fixes.acs: true and run `p2pnode apply`, or by hand `setpci -s " +
        bdf +
        " ECAP_ACS+6.w=0000:003c`; or disable ACS in the BIOS (AMD: NBIO \"ACS Enable\", "
        "Intel: \"ACS Control\"). Linux sets these bits when an IOMMU is on: turning the "
        "IOMMU off or to passthrough may clear them too.";
    out.push_back(f);
  }
  if (out.empty()) {
    Finding f = make_finding(
        "pcie.acs", "node", Severity::ok,
        pairs.empty() ? "no peer pairs to judge"
                      : "no ACS redirect on the " + std::to_string(bridge_pairs.size()) + " bridge(s) between peers");
    f.observed = {{"bridges_checked", bridge_pairs.size()}, {"pairs", pairs.size()}};
    f.expected = {{"acs_control_redirect_bits", 0}};
    out.push_back(f);
  }
  return out;
}

std::vector<Finding> check_pcie_link(const Profile& p, const Inventory& inv) {
  std::vector<Finding> out;
  std::vector<const PciDevice*> devs = inv.gpus();
  for (const auto* n : inv.nvme_controllers()) { devs.push_back(n); }
  for (const auto* d : devs) {
    Finding f = make_finding("pcie.link", d->bdf, Severity::ok, "");
    const LinkInfo& l = d->link;
    if (!l.current_gts || !l.current_width) {
      f.summary = "link speed/width not reported (virtual device or no PCIe link)";
      f.observed = nullptr;
      out.push_back(f);
      continue;
    }
    // The usable maximum is the lower of the device's and its upstream port's.
    double max_gts = l.max_gts.value_or(*l.current_gts);
    int max_width = l.max_width.value_or(*l.current_width);
    if (!d->upstream.empty()) {
      if (const PciDevice* port = inv.find(d->upstream.back())) {
        if (port->link.max_gts) { max_gts = std::min(max_gts, *port->link.max_gts); }
        if (port->link.max_width) { max_width = std::min(max_width, *port->link.max_width); }
      }
    }
    f.observed = {{"speed", gts(*l.current_gts)}, {"width", *l.current_width}};
    // The profile's minimums are for the GPUs; an NVMe is judged against its own maximum.
    const bool gpu = d->kind == DeviceKind::gpu;
    const double min_gts = gpu ? p.platform.min_link_gts.value_or(0.0) : 0.0;
    const int min_width = gpu ? p.platform.min_link_width.value_or(0) : 0;
    f.expected = {{"speed", gts(std::max(max_gts, min_gts))}, {"width", std::max(max_width, min_width)}};
    std::vector<std::string> problems;
    Severity sev = Severity::ok;
    if (*l.current_width < max_width || *l.current_width < min_width) {
      problems.push_back("trained at x" + std::to_string(*l.current_width) + " of x" +
                         std::to_string(std::max(max_width, min_width)));
      sev = Severity::error;
    }
    if (max_gts < min_gts) {
      problems.push_back("slot or device tops out at " + gts(max_gts) + ", the profile needs Gen" +
                         std::to_string(gen_of(min_gts)));
      sev = Severity::error;
    }
    if (*l.current_gts < max_gts) {
      problems.push_back("running at " + gts(*l.current_gts) + " (Gen" + std::to_string(gen_of(*l.current_gts)) +
                         ") of " + gts(max_gts) + " (Gen" + std::to_string(gen_of(max_gts)) + ")");
      if (sev == Severity::ok) { sev = Severity::warning; }
    }
    f.severity = sev;
    if (problems.empty()) {
      f.summary = "x" + std::to_string(*l.current_width) + " at " + gts(*l.current_gts);
    } else {
      f.summary = problems.front();
      for (std::size_t i = 1; i < problems.size(); ++i) { f.summary += "; " + problems[i]; }
      f.summary += ": P2P bandwidth drops with the link";
      f.remediation =
          "Reseat the card in a full x16 slot wired to the CPU, check risers and retimers and "
          "the slot's bifurcation and link speed settings in the BIOS (\"PCIe Gen\" set to Auto "
          "or the highest). GPUs lower their link speed when idle: if only the speed is low, "
          "recheck under load (nvidia-smi -q -d PCIE) before replacing hardware.";
    }
    out.push_back(f);
  }
  return out;
}

std::vector<Finding> check_pcie_topology(const Profile& p, const Inventory& inv) {
  const auto gpus = inv.gpus();
  const auto m = pci::topology_matrix(gpus);
  Finding f = make_finding("pcie.topology", "node", Severity::ok, "");
  nlohmann::json devices = nlohmann::json::array(), matrix = nlohmann::json::array();
  std::map<std::string, int> counts;
  std::vector<std::string> bad;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    devices.push_back({{"bdf", gpus[i]->bdf},
                       {"root_complex", gpus[i]->root_complex},
                       {"numa_node", gpus[i]->numa_node},
                       {"bridges", gpus[i]->upstream}});
    nlohmann::json row = nlohmann::json::array();
    for (std::size_t j = 0; j < gpus.size(); ++j) {
      const auto c = m.cls[i][j];
      // An NVLink pair (the driver's view, merged from the self-test) is NV<n>, not its PCIe class.
      const std::string label = i == j ? pci::to_string(c) : pci::pair_link(*gpus[i], *gpus[j], inv);
      row.push_back(label);
      if (j <= i) { continue; }
      ++counts[label];
      const bool nvlink = label.rfind("NV", 0) == 0;
      const bool ok = p.platform.topology == TopologyPolicy::any || nvlink ||
                      (p.platform.topology == TopologyPolicy::same_switch &&
                       (c == pci::PairClass::pix || c == pci::PairClass::pxb)) ||
                      (p.platform.topology == TopologyPolicy::same_root_complex &&
                       (c == pci::PairClass::pix || c == pci::PairClass::pxb || c == pci::PairClass::phb));
      if (!ok) { bad.push_back(gpus[i]->bdf + "-" + gpus[j]->bdf + " " + label); }
    }
    matrix.push_back(row);
  }
  f.observed = {{"devices", devices}, {"matrix", matrix}, {"pair_classes", counts}};
  if (!inv.interconnect_source.empty()) { f.observed["interconnect_source"] = inv.interconnect_source; }
  f.expected = to_string(p.platform.topology);
  std::string dist;
  for (const auto& [c, n] : counts) { dist += (dist.empty() ? "" : ", ") + std::to_string(n) + " " + c; }
  if (bad.empty()) {
    f.summary = std::to_string(gpus.size()) + " GPUs" + (dist.empty() ? "" : ", pairs: " + dist);
    return {f};
  }
  f.severity = Severity::error;
  f.summary =
      std::to_string(bad.size()) + " GPU pair(s) not " +
      (p.platform.topology == TopologyPolicy::same_switch ? "under one PCIe switch" : "under one root complex") + ": " +
      bad.front() + (bad.size() > 1 ? ", …" : "");
  f.observed["violations"] = bad;
  f.remediation =
      "Move the GPUs so that peers share a switch or root complex (see the matrix), or relax "
      "platform.topology in the profile; pairs across NUMA nodes (SYS) reach about 40 GB/s "
      "both ways on PCIe 4.0 where one root complex gives 50.";
  return {f};
}

}  // namespace p2pnode::checks
