#pragma once
// probe_nvme_*: what the NVMe controllers of the box are, who uses their block devices, and what
// p2pnode remembered about the ones it bound. Reads only.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "nvme/safety.hpp"
#include "nvme/select.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::probe {

// Where p2pnode keeps the serials of the drives it bound (their nvme class entry disappears).
inline constexpr const char* kNvmeSerialsFile = "/var/lib/p2pnode/nvme-serials.json";

struct NvmeFunctionState {
  std::string bdf;
  std::string dir;              // /sys/bus/pci/devices/<bdf>
  bool present = false;         // the directory exists
  std::string driver;           // nvme, vfio-pci, "" when none
  std::string driver_override;  // "" when "(null)"
  std::string power_state, power_control;
  std::vector<std::string> controllers;  // nvme1 (only while bound to nvme)
  std::optional<std::string> serial, model;
  std::vector<std::uint8_t> config;  // at least the first 256 bytes when readable
  std::optional<int> pm_state;       // PMCSR D-state (PM capability found by walking the list)
  std::optional<std::uint16_t> command;
};

struct RememberedDrive {
  std::string serial, model, address;
};

// PCI functions with class 0x0108xx (NVMe), sorted by address.
std::vector<std::string> list_nvme_functions(const sys::SysRoot& root);
NvmeFunctionState probe_nvme_function(const sys::SysRoot& root, const std::string& bdf);
// Namespaces (multipath heads and path nodes included) and partitions of a controller, each with
// its mounts, holders, swap use and on-disk signature.
nvme::ControllerUse probe_nvme_usage(const sys::SysRoot& root, const std::string& bdf);
std::vector<RememberedDrive> read_remembered_drives(const sys::SysRoot& root);
std::string render_remembered_drives(const std::vector<RememberedDrive>& drives);
// Live serial/model where the nvme driver shows them, else what was remembered for the address.
std::vector<nvme::ControllerIdentity> probe_nvme_identities(const sys::SysRoot& root);
// The first `bytes` of BAR0 through <dir>/resource0 (mmap, 32-bit reads: memory BARs refuse read(2)).
Result<std::vector<std::uint8_t>> read_bar0(const sys::SysRoot& root, const std::string& bdf, std::size_t bytes);

}  // namespace p2pnode::probe
