#include <cstdio>

#include "checks/check.hpp"
#include "nvidia/gpu_arch.hpp"
#include "nvidia/gpu_table.hpp"

namespace p2pnode::checks {

namespace {
constexpr Bytes kExtra = 128 * KiB;  // the patched driver maps VRAM + 128 KiB into BAR1

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

struct Vram {
  Bytes bytes = 0;
  std::string source;
  std::string note;  // the card's own report where it overrides the table, for the summary
};

// What the card reports is a little below its physical memory (CUDA keeps some); beyond this
// fraction the card is not the model the table names (a modded 48 GB card reports twice as much).
constexpr double kReportedTolerance = 0.10;

Bytes whole_gib(Bytes b) { return (b + GiB - 1) / GiB * GiB; }

std::optional<Vram> vram_of(const Profile& p, const Inventory& inv, const PciDevice& g) {
  if (p.platform.gpu_vram) { return Vram{*p.platform.gpu_vram, "profile platform.gpu_vram", ""}; }
  const auto m = nvidia::find_gpu_model(g.device);
  const auto rep = inv.gpu_memory.find(g.bdf);
  if (rep != inv.gpu_memory.end() && rep->second > 0) {
    const Bytes r = rep->second;
    const std::string said = "the card reports " + format_size(r) + " (" + inv.gpu_memory_source + ")";
    if (!m) { return Vram{whole_gib(r), said + ", rounded up to whole GiB", ""}; }
    const double diff = (static_cast<double>(r) - static_cast<double>(m->vram)) / static_cast<double>(m->vram);
    if (diff > kReportedTolerance || diff < -kReportedTolerance) {
      return Vram{whole_gib(r), said + ", rounded up to whole GiB",
                  "; " + said + ", the model table says " + format_size(m->vram) + " for " + std::string(m->name) +
                      ": judged by the card's own (a modded card?)"};
    }
  }
  if (m) { return Vram{m->vram, "built-in table: " + std::string(m->name), ""}; }
  return std::nullopt;
}

std::string bios_fix(bool below_4g) {
  std::string s =
      "In the BIOS, enable Above 4G Decoding and Resizable BAR (often under PCI Subsystem "
      "Settings; on some boards CSM must be off for Resizable BAR to appear), then reboot.";
  if (below_4g) { s = "The aperture sits below 4 GiB, so Above 4G Decoding is off. " + s; }
  return s;
}
}  // namespace

std::vector<Finding> check_rebar_aperture(const Profile& p, const Inventory& inv) {
  std::vector<Finding> out;
  const Severity fail = p.platform.resizable_bar == RebarPolicy::required ? Severity::error : Severity::warning;
  for (const auto* g : inv.gpus()) {
    Finding f = make_finding("rebar.aperture", g->bdf, Severity::ok, "");
    const Bar* ap = g->vram_aperture();
    const auto vram = vram_of(p, inv, *g);
    if (vram) {
      f.expected = {{"min_bytes", vram->bytes + kExtra},
                    {"why", "VRAM " + format_size(vram->bytes) + " + 128 KiB (" + vram->source + ")"}};
    }
    if (!ap) {
      f.severity = fail;
      f.summary = "no 64-bit prefetchable memory BAR (cannot find the VRAM aperture)";
      f.observed = {{"bars", g->bars.size()}};
      f.remediation = bios_fix(false);
      out.push_back(f);
      continue;
    }
    f.observed = {{"bar", ap->index}, {"bytes", ap->size()}, {"start", hex(ap->start)}};
    if (const auto rep = inv.gpu_memory.find(g->bdf); rep != inv.gpu_memory.end()) {
      f.observed["vram_reported"] = {{"bytes", rep->second}, {"source", inv.gpu_memory_source}};
    }
    if (!vram) {
      f.severity = Severity::warning;
      f.summary = "VRAM aperture " + format_size(ap->size()) + "; VRAM of device " + hex(g->device) + " unknown";
      f.remediation = "Set platform.gpu_vram in the profile (e.g. 24GiB) so the aperture can be judged.";
      out.push_back(f);
      continue;
    }
    const Bytes need = vram->bytes + kExtra;
    const RebarEntry* cap = nullptr;
    for (const auto& e : g->rebar) {
      if (e.bar == ap->index && e.supported_mask) { cap = &e; }
    }
    const bool window = p.driver && p.driver->kernel_module && p.driver->kernel_module->bar1 == Bar1Mapping::window;
    if (window && ap->size() < need) {
      // A tree that peers through a BAR1 window: the BAR at the largest size the card offers is all it needs.
      const Bytes largest = cap ? cap->largest_supported() : 0;
      f.expected = {
          {"min_bytes", largest},
          {"why", "the card's largest BAR" + std::to_string(ap->index) + " (driver.kernel_module.bar1: window)"}};
      if (!cap || ap->size() >= largest) {
        f.summary = "VRAM aperture (BAR" + std::to_string(ap->index) + ") is " + format_size(ap->size()) +
                    (cap ? ", the card's largest" : "") + "; the tree peers through a BAR1 window (bar1: window), so " +
                    format_size(vram->bytes) + " of VRAM need not fit" + vram->note;
      } else {
        f.severity = fail;
        f.summary = "VRAM aperture (BAR" + std::to_string(ap->index) + ") is " + format_size(ap->size()) +
                    ", the card offers " + format_size(largest) + " (bar1: window needs the largest)";
        f.remediation = bios_fix(ap->end < 4 * GiB);
      }
    } else if (ap->size() >= need) {
      f.summary = "VRAM aperture (BAR" + std::to_string(ap->index) + ") is " + format_size(ap->size()) + ", covers " +
                  format_size(vram->bytes) + " + 128 KiB" + vram->note;
    } else {
      f.severity = fail;
      const bool below_4g = ap->end < 4 * GiB;
      f.summary = "VRAM aperture (BAR" + std::to_string(ap->index) + ") is " + format_size(ap->size()) +
                  ", needs >= " + format_size(vram->bytes) + " + 128 KiB" + vram->note;
      f.remediation = bios_fix(below_4g);
      if (!vram->note.empty() && cap && cap->largest_supported() < need) {  // the card reports more than its model
        const auto* card = nvidia::find_p2p_card(g->device);
        f.remediation = "This card's Resizable BAR offers at most " + format_size(cap->largest_supported()) +
                        " for BAR" + std::to_string(ap->index) + ", less than its " + format_size(vram->bytes) +
                        " of VRAM: no BIOS setting makes room, and the standard P2P patch, which maps all VRAM into "
                        "BAR1, cannot peer it (aikitoria#14, tinygrad#36).";
        f.remediation +=
            card && card->generation == "Ada"
                ? " A tree that peers through a BAR1 window can: the -48g forks for 48 GB RTX 4090s "
                  "(LingzheZhao's 610.57.04-p2p-48g on aikitoria's 610.57.04-p2p-v2, Duanyll's "
                  "595.71.05-p2p-48g). Name one in driver.kernel_module and set driver.kernel_module.bar1: "
                  "window; or leave P2P off for this card."
                : " Use cards whose BAR covers their VRAM, or leave P2P off for this one.";
      }
      if (vram->note.empty() && !below_4g && !g->rebar.empty() && g->resize_attrs.count(ap->index)) {
        f.remediation +=
            " Or let p2pnode resize it: set platform.fixes.rebar: true (the kernel offers "
            "resource" +
            std::to_string(ap->index) + "_resize; it works while no driver is bound).";
      }
    }
    out.push_back(f);
  }
  return out;
}

std::vector<Finding> check_rebar_capability(const Profile& p, const Inventory& inv) {
  std::vector<Finding> out;
  for (const auto* g : inv.gpus()) {
    Finding f = make_finding("rebar.capability", g->bdf, Severity::ok, "");
    if (g->rebar.empty()) {
      f.observed = {{"capability", g->rebar_hidden ? "hidden" : "absent"}, {"config_bytes", g->config_size}};
      if (g->rebar_hidden) {
        f.summary = g->config_size < 4096
                        ? "Resizable BAR capability not visible: only " + std::to_string(g->config_size) +
                              " bytes of config space readable (run as root)"
                        : "Resizable BAR capability hidden: the extended config space masks capability "
                          "IDs (virtualised config space); judged from the aperture size alone";
      } else {
        f.summary = "no Resizable BAR capability";
      }
      out.push_back(f);
      continue;
    }
    nlohmann::json bars = nlohmann::json::array();
    for (const auto& e : g->rebar) {
      nlohmann::json sizes = nlohmann::json::array();
      for (int bit = 0; bit < 28; ++bit) {
        if (e.supported_mask & (1ULL << bit)) { sizes.push_back(format_size(1ULL << (bit + 20))); }
      }
      bars.push_back({{"bar", e.bar},
                      {"current", format_size(e.current_size)},
                      {"largest", format_size(e.largest_supported())},
                      {"supported", sizes}});
      const bool resizable_here = g->resize_attrs.count(e.bar) > 0;
      if (e.largest_supported() > e.current_size) {
        Finding w = make_finding(
            "rebar.capability", g->bdf,
            p.platform.resizable_bar == RebarPolicy::required ? Severity::error : Severity::warning,
            "BAR" + std::to_string(e.bar) + " is " + format_size(e.current_size) + " but the device supports " +
                format_size(e.largest_supported()) + ": the BIOS did not resize it");
        w.observed = bars.back();
        w.expected = {{"current", format_size(e.largest_supported())}};
        w.remediation = "Enable Above 4G Decoding and Resizable BAR in the BIOS, then reboot.";
        if (resizable_here) {
          w.remediation += std::string(" The kernel offers resource") + std::to_string(e.bar) +
                           "_resize: with platform.fixes.rebar: true, `p2pnode apply` resizes it while no "
                           "driver is bound" +
                           (g->driver.empty() ? " (none is bound now)." : " (unbind " + g->driver + " first).");
        }
        out.push_back(w);
      }
    }
    f.observed = {{"bars", bars}};
    f.summary =
        "Resizable BAR capability: " + std::to_string(g->rebar.size()) + " resizable BAR(s), each at its largest size";
    if (out.empty() || out.back().subject != g->bdf) { out.push_back(f); }
  }
  return out;
}

}  // namespace p2pnode::checks
