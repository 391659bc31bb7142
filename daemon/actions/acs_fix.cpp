#include <cstdio>
#include <set>
#include "core/hex.hpp"

#include "actions/platform_fixes.hpp"
#include "core/peers.hpp"
#include "pci/config_space.hpp"
#include "pci/topology.hpp"
#include "probe/probe.hpp"

namespace p2pnode::actions {
namespace {

constexpr std::uint16_t kRedirectBits = 0x003C;  // P2P req/cpl redirect, upstream fwd, egress ctl

// Bridges between peers (as the pcie.acs check judges them) whose ACS control redirects.
std::vector<const PciDevice*> redirecting_bridges(const Profile& p, const Inventory& inv) {
  std::set<std::string> seen;
  std::vector<const PciDevice*> out;
  for (const auto& [a, b] : peer_pairs(p, inv)) {
    for (const auto& bdf : pci::bridges_between(*a, *b)) {
      if (const PciDevice* br = inv.find(bdf);
          br && br->acs && (br->acs->control & kRedirectBits) && seen.insert(bdf).second) {
        out.push_back(br);
      }
    }
  }
  return out;
}

class AcsFix final : public Action {
 public:
  std::string_view id() const override { return "pcie.acs"; }

  std::vector<Step> plan(const Profile& p, const Inventory& inv, const sys::SysRoot&) const override {
    std::vector<Step> steps;
    if (!p.platform.fix_acs || p.platform.acs != AcsPolicy::disabled) { return steps; }
    for (const PciDevice* br : redirecting_bridges(p, inv)) {
      const std::uint16_t want = br->acs->control & static_cast<std::uint16_t>(~kRedirectBits);
      steps.push_back(
          {"pcie.acs",
           br->bdf,
           "clear ACS P2P redirect and egress control: control " + hex4(br->acs->control) + " -> " + hex4(want),
           false,
           false,
           {{"control_before", br->acs->control}, {"control_wanted", want}}});
    }
    return steps;
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory& inv) const override {
    std::vector<StepResult> results;
    if (!ctx.profile.platform.fix_acs) { return results; }
    for (const PciDevice* br : redirecting_bridges(ctx.profile, inv)) { results.push_back(apply_one(ctx, *br)); }
    return results;
  }

 private:
  static StepResult apply_one(ApplyContext& ctx, const PciDevice& br) {
    StepResult r{"pcie.acs", br.bdf, StepOutcome::failed, "", {{"control", br.acs->control}}, nullptr, 0};
    const std::string cfg_path = br.sysfs_path + "/config";
    // Check: re-read now, the inventory may be stale.
    auto cfg = ctx.root.read_bytes(cfg_path, 4096);
    if (!cfg) {
      r.message = "reading config space: " + cfg.error().message;
      return r;
    }
    const auto acs = pci::decode_acs(*cfg);
    if (!acs) {
      r.message = "the ACS capability is no longer readable (config space shorter than 4 KiB? run as root)";
      return r;
    }
    if (!(acs->control & kRedirectBits)) {
      r.outcome = StepOutcome::unchanged;
      r.message = "ACS redirect already off (" + hex4(acs->control) + ")";
      r.after = {{"control", acs->control}};
      return r;
    }
    // Act: read-modify-write of the 16-bit control register only.
    const std::uint16_t want = acs->control & static_cast<std::uint16_t>(~kRedirectBits);
    const std::uint8_t bytes[2] = {static_cast<std::uint8_t>(want & 0xFF), static_cast<std::uint8_t>(want >> 8)};
    const auto before_writes = ctx.root.write_count();
    if (auto st = ctx.root.write_bytes_at(cfg_path, static_cast<std::uint64_t>(acs->offset + 6), bytes); !st) {
      r.message = "writing ACS control: " + st.error().message;
      r.writes = ctx.root.write_count() - before_writes;
      return r;
    }
    r.writes = ctx.root.write_count() - before_writes;
    // Verify: read it back.
    auto again = ctx.root.read_bytes(cfg_path, 4096);
    const auto after = again ? pci::decode_acs(*again) : std::nullopt;
    if (!after) {
      r.message = "ACS control written but could not be read back";
      return r;
    }
    r.after = {{"control", after->control}};
    if (after->control & kRedirectBits) {
      r.message = "wrote " + hex4(want) + " but the bridge reads back " + hex4(after->control);
      return r;
    }
    r.outcome = StepOutcome::changed;
    r.message = "ACS control " + hex4(acs->control) + " -> " + hex4(after->control);
    ctx.log("pcie.acs", br.bdf, r.message);
    return r;
  }
};

}  // namespace

std::unique_ptr<Action> make_acs_fix() { return std::make_unique<AcsFix>(); }

}  // namespace p2pnode::actions
