#include "actions/platform_fixes.hpp"
#include "pci/sysfs_decode.hpp"
#include "probe/probe.hpp"

namespace p2pnode::actions {
namespace {

struct Resize {
  const PciDevice* gpu;
  int bar;
  int bit;  // bit number to write: size 2^(bit+20)
  std::uint64_t current, target;
};

std::vector<Resize> wanted_resizes(const Inventory& inv) {
  std::vector<Resize> out;
  for (const auto* g : inv.gpus()) {
    for (const auto& e : g->rebar) {
      auto attr = g->resize_attrs.find(e.bar);
      if (attr == g->resize_attrs.end()) { continue; }
      // The kernel's bitmap says what it will accept; take its largest size.
      const auto bitmap = pci::decode_resize_bitmap(attr->second);
      if (!bitmap || !*bitmap) { continue; }
      int bit = 63;
      while (bit >= 0 && !(*bitmap & (1ULL << bit))) { --bit; }
      const std::uint64_t target = 1ULL << (bit + 20);
      std::uint64_t current = 0;
      for (const auto& b : g->bars) {
        if (b.index == e.bar) { current = b.size(); }
      }
      if (target > current) { out.push_back({g, e.bar, bit, current, target}); }
    }
  }
  return out;
}

class RebarResize final : public Action {
 public:
  std::string_view id() const override { return "rebar.resize"; }

  std::vector<Step> plan(const Profile& p, const Inventory& inv, const sys::SysRoot&) const override {
    std::vector<Step> steps;
    if (!p.platform.fix_rebar) { return steps; }
    for (const auto& r : wanted_resizes(inv)) {
      Step s{"rebar.resize",
             r.gpu->bdf,
             "resize BAR" + std::to_string(r.bar) + " from " + format_size(r.current) + " to " + format_size(r.target) +
                 " through resource" + std::to_string(r.bar) + "_resize",
             false,
             false,
             {{"bar", r.bar}, {"bytes_before", r.current}, {"bytes_wanted", r.target}}};
      if (!r.gpu->driver.empty()) {
        s.description += " (needs the " + r.gpu->driver + " driver unbound first: the kernel refuses with EBUSY)";
        s.needs_operator = true;
      }
      steps.push_back(s);
    }
    return steps;
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory& inv) const override {
    std::vector<StepResult> results;
    if (!ctx.profile.platform.fix_rebar) { return results; }
    for (const auto& r : wanted_resizes(inv)) {
      StepResult res{"rebar.resize", r.gpu->bdf, StepOutcome::failed, "", {{"bar", r.bar}, {"bytes", r.current}},
                     nullptr,        0};
      if (!r.gpu->driver.empty()) {
        res.outcome = StepOutcome::refused;
        res.message =
            "the " + r.gpu->driver + " driver is bound; the kernel resizes a BAR only while no driver is bound";
        results.push_back(res);
        continue;
      }
      const auto before = ctx.root.write_count();
      const std::string attr = r.gpu->sysfs_path + "/resource" + std::to_string(r.bar) + "_resize";
      auto st = ctx.root.write_attr(attr, std::to_string(r.bit));
      res.writes = ctx.root.write_count() - before;
      if (!st) {
        res.message =
            "resizing BAR" + std::to_string(r.bar) + " to " + format_size(r.target) + ": " + st.error().message +
            (st.error().code == ENOSPC ? " (the bridge window has no room: enable Above 4G Decoding in the BIOS)" : "");
        results.push_back(res);
        continue;
      }
      // Verify from `resource`, as the kernel reports it after the resize.
      const PciDevice after = probe::probe_pci_device(ctx.root, r.gpu->bdf);
      std::uint64_t now = 0;
      for (const auto& b : after.bars) {
        if (b.index == r.bar) { now = b.size(); }
      }
      res.after = {{"bar", r.bar}, {"bytes", now}};
      if (now >= r.target) {
        res.outcome = StepOutcome::changed;
        res.message = "BAR" + std::to_string(r.bar) + " is now " + format_size(now);
      } else {
        res.message = "wrote " + std::to_string(r.bit) + " to resource" + std::to_string(r.bar) + "_resize but BAR" +
                      std::to_string(r.bar) + " is " + format_size(now);
      }
      results.push_back(res);
    }
    return results;
  }
};

}  // namespace

std::unique_ptr<Action> make_rebar_resize() { return std::make_unique<RebarResize>(); }

}  // namespace p2pnode::actions
