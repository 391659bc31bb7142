// platform.peer_alignment: on AMD client root complexes the peer DMA address sits 4 MiB into BAR1;
// a module tree that still refuses peer addresses not aligned at 512 MiB then fails the first peer
// mapping. Known from the tree's source (probed in /usr/src), not its version string.
#include <algorithm>

#include "checks/check.hpp"
#include "core/module_package.hpp"
#include "nvidia/peer_alignment.hpp"

namespace p2pnode::checks {

std::vector<Finding> check_peer_alignment(const Profile& p, const Inventory& inv) {
  const auto platform = nvidia::offset_peer_address_platform(inv);
  if (!platform) { return {}; }
  const std::string patch(nvidia::kPeerAlignmentPatch);
  Finding f = make_finding("platform.peer_alignment", "node", Severity::ok, "");
  const auto* km = p.driver && p.driver->kernel_module ? &*p.driver->kernel_module : nullptr;
  const std::string version = p.driver ? p.driver->version : inv.nvidia.loaded_version.value_or("");
  // The profile's tree as p2pnode stages it, else any tree of the wanted (or loaded) version.
  std::string tree;
  std::optional<bool> demands;
  for (const auto& [dir, d] : inv.nvidia.peer_alignment) {
    const bool exact = km && dir == module_package(*p.driver).src_dir();
    const bool same_version = !version.empty() && dir.size() > version.size() &&
                              dir.compare(dir.size() - version.size() - 1, std::string::npos, "-" + version) == 0;
    if (exact || (tree.empty() && same_version)) {
      tree = dir;
      demands = d;
    }
  }
  const bool patched = km && std::any_of(km->patches.begin(), km->patches.end(),
                                         [&](const Artifact& a) { return a.builtin && *a.builtin == patch; });
  f.observed = {{"platform", *platform},
                {"tree", tree.empty() ? nlohmann::json(nullptr) : nlohmann::json(tree)},
                {"demands_512mib_alignment", demands ? nlohmann::json(*demands) : nlohmann::json(nullptr)},
                {"builtin_patch", patched}};
  f.expected = "a tree that accepts a peer address 4 MiB into BAR1 (or the builtin patch " + patch + ")";
  const std::string why = " On " + *platform +
                          " the peer DMA address sits 4 MiB into BAR1 (\"The peer DMA address "
                          "0x…400000 is not aligned at 0x20000000\", tinygrad#44 on AM5, PR#48 on X570)";
  const std::string add = "Add {builtin: " + patch +
                          "} to driver.kernel_module.patches and apply again (it turns the "
                          "refusal in " +
                          std::string(nvidia::kPeerAlignmentFile) +
                          " into a warning; it changes the "
                          "core, so the core is rebuilt once).";
  if (patched) {
    f.summary =
        "the profile carries the builtin patch " + patch + ": unaligned peer addresses on this platform are accepted";
  } else if (demands && !*demands) {
    f.summary = tree + " accepts peer DMA addresses not aligned at 512 MiB (its source checks but does not refuse)";
  } else if (demands && *demands) {
    f.severity = Severity::warning;
    f.summary = tree + " refuses peer DMA addresses not aligned at 512 MiB:" + why +
                ", so the first peer mapping "
                "fails (cudaErrorMapBufferObjectFailed)";
    f.remediation = add;
  } else {
    f.severity = Severity::warning;
    f.summary = (tree.empty() ? std::string("the module tree is not staged in /usr/src yet")
                              : tree + ": the alignment check is not where p2pnode looks (" +
                                    std::string(nvidia::kPeerAlignmentFile) + ")") +
                ", so whether it refuses unaligned peer addresses is unknown." + why;
    f.remediation = "Trees of 550 to 565 (and forks of them) refuse: " + add +
                    (tree.empty() ? " `p2pnode check` knows for sure once apply has staged the tree." : "");
  }
  return {f};
}

}  // namespace p2pnode::checks
