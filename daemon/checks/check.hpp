#pragma once
// Checks are pure: (Profile, Inventory) -> findings. One explicit list, stable ids.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.hpp"
#include "core/inventory.hpp"
#include "core/profile.hpp"

namespace p2pnode::checks {

struct CheckDef {
  std::string_view id;
  std::string_view description;
  std::vector<Finding> (*run)(const Profile&, const Inventory&);
};

const std::vector<CheckDef>& all_checks();
std::vector<Finding> run_all_checks(const Profile& profile, const Inventory& inv);

// The individual checks (one file each).
std::vector<Finding> check_sysfs(const Profile&, const Inventory&);
std::vector<Finding> check_iommu_mode(const Profile&, const Inventory&);
std::vector<Finding> check_iommu_noiommu(const Profile&, const Inventory&);
std::vector<Finding> check_rebar_aperture(const Profile&, const Inventory&);
std::vector<Finding> check_rebar_capability(const Profile&, const Inventory&);
std::vector<Finding> check_pcie_acs(const Profile&, const Inventory&);
std::vector<Finding> check_pcie_link(const Profile&, const Inventory&);
std::vector<Finding> check_pcie_topology(const Profile&, const Inventory&);
std::vector<Finding> check_gpu_models(const Profile&, const Inventory&);
std::vector<Finding> check_driver_state(const Profile&, const Inventory&);
std::vector<Finding> check_driver_branch(const Profile&, const Inventory&);
std::vector<Finding> check_peer_alignment(const Profile&, const Inventory&);
std::vector<Finding> check_driver_kernels(const Profile&, const Inventory&);
std::vector<Finding> check_boot_guard(const Profile&, const Inventory&);
std::vector<Finding> check_nvme_binding(const Profile&, const Inventory&);
std::vector<Finding> check_secure_boot(const Profile&, const Inventory&);
std::vector<Finding> check_gdrcopy_bar1(const Profile&, const Inventory&);
std::vector<Finding> check_gdrcopy_flavour(const Profile&, const Inventory&);
std::vector<Finding> check_gdrcopy_backend(const Profile&, const Inventory&);
std::vector<Finding> check_gdrcopy_kernels(const Profile&, const Inventory&);

// RMForceP2PType sanity for a driver branch (nullopt when fine).
std::optional<std::string> p2p_type_problem(const std::map<std::string, std::string>& options,
                                            const std::string& version);

// Helpers shared by checks.
Finding make_finding(std::string_view check, std::string subject, Severity sev, std::string summary);
bool is_amd_platform(const Inventory& inv);

}  // namespace p2pnode::checks
