#pragma once
// NodeProfile (apiVersion p2pnode/v1): what a box of a given kind must look like. Plain data;
// loading and validation live in profile/. The JSON Schema is api/profile.schema.json.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/pci_address.hpp"
#include "core/units.hpp"

namespace p2pnode {

enum class IommuPolicy { off, passthrough, off_or_passthrough, any };
enum class RebarPolicy { required, optional };
enum class AcsPolicy { disabled, any };
enum class TopologyPolicy { any, same_switch, same_root_complex };
enum class ConflictPolicy { report, remove };

struct Artifact {                   // a file p2pnode fetches or copies, always checked against its sha256
  std::optional<std::string> path;  // local file or directory
  std::optional<std::string> url;   // http(s)
  std::optional<std::string> git;   // a git repository (with branch)
  std::optional<std::string> branch;
  std::string sha256;                  // of the file; for a directory or git: of the tree listing
  std::optional<std::string> builtin;  // patches only: a patch p2pnode ships (nvidia/patches/<name>.patch)
};

struct GpuMatch {
  std::optional<std::uint16_t> vendor;
  std::vector<std::uint16_t> devices;  // any of these device ids
  std::optional<int> count;
};

struct Match {
  std::optional<GpuMatch> gpus;
  std::optional<std::string> hostname;     // glob
  std::map<std::string, std::string> dmi;  // field -> glob (board_name, sys_vendor, …)
};

struct PlatformSpec {
  RebarPolicy resizable_bar = RebarPolicy::required;
  IommuPolicy iommu = IommuPolicy::off_or_passthrough;
  AcsPolicy acs = AcsPolicy::disabled;
  std::optional<double> min_link_gts;  // e.g. 16.0 (Gen4)
  std::optional<int> min_link_width;   // e.g. 16
  std::optional<Bytes> gpu_vram;       // overrides the built-in table
  TopologyPolicy topology = TopologyPolicy::any;
  // Fixes p2pnode may perform itself.
  bool fix_acs = false;
  bool fix_rebar = false;
  std::optional<std::string> fix_kernel_cmdline;  // e.g. "iommu=pt"
};

// The key DKMS signs the module with, named by the profile (instead of DKMS's own): apply points
// DKMS at it through /etc/dkms/framework.conf.d/p2pnode-signing.conf, and makes it if missing.
struct ModuleSigning {
  std::string key;          // private key (PEM), absolute path
  std::string certificate;  // its certificate (DER), absolute path
};

// How the tree's P2P patch reaches peer VRAM through BAR1. full: the standard patch maps all VRAM
// into BAR1 (BAR1 must cover VRAM + 128 KiB); window: a tree that peers through a BAR1 window smaller
// than VRAM (the -48g forks for 48 GB RTX 4090s, whose BAR1 is at most 32 GiB): BAR1 at the largest
// size the card offers.
enum class Bar1Mapping { full, window };

struct ModuleSource {
  Artifact artifact;
  std::string name = "nvidia-p2p";  // DKMS package name
  Bar1Mapping bar1 = Bar1Mapping::full;
  std::vector<Artifact> patches;
  std::optional<ModuleSigning> signing;
  // Not read from YAML: a module built against another one's staged source (gdrdrv against the
  // NVIDIA tree's kernel-open/nvidia, lifecycle/gdrdrv.hpp): that directory, and the tree's
  // identity, which is part of this module's (a changed NVIDIA tree rebuilds it).
  std::string nvidia_src_dir, nvidia_identity;
};

struct DriverSpec {
  std::string version;  // 550.90.07
  std::optional<Artifact> userspace_installer;
  std::vector<std::string> installer_flags;
  std::optional<ModuleSource> kernel_module;
  std::map<std::string, std::string> module_options;  // NVreg_* -> value
  ConflictPolicy conflicts = ConflictPolicy::report;
  std::vector<std::string> stop_units;  // units p2pnode may stop for a reload
  bool allow_reload = false;
  bool allow_kill_holders = false;
  // false (default): never let GRUB boot a kernel that lacks the built module while an older
  // installed one has it (driver.boot_guard holds GRUB's default on that one, and says so).
  bool allow_boot_without_module = false;
};

// gdrcopy (gdrcopy:): its kernel module gdrdrv, built against the NVIDIA module's staged source
// (driver.kernel_module), and the device node its library opens.
struct GdrcopySpec {
  std::string version;  // gdrcopy's release, 2.6
  Artifact source;      // its source (release tarball or directory), checked against its sha256
  std::string device_owner = "root";
  std::string device_group = "root";
  unsigned device_mode = 0660;  // /dev/gdrdrv
  // The most gdrcopy's users pin on one GPU at a time: the driver maps every pin into BAR1 and
  // refuses one that would leave less than 36 MiB of it free (gdrcopy.bar1 judges it).
  Bytes pin = 64 * MiB;
};

struct NvmeDrive {
  std::optional<std::string> serial;
  std::optional<std::string> model;
  std::optional<PciAddress> address;  // 0000:0b:00.0 (lower case, as sysfs lists it)
  std::string driver = "vfio-pci";
  bool power_fixups = true;
  bool wipe_ok = false;
  std::optional<PciAddress> pair_gpu;  // a GPU address this drive does P2P with
};

// How messages and duplicate checks name a drive: "serial S1234", "address 0000:0b:00.0", "model M";
// the serial and model trimmed (sysfs pads them with blanks). The one place a drive key is made.
std::string drive_key(const NvmeDrive& d);

struct NvmeSpec {
  bool noiommu = false;
  std::vector<NvmeDrive> drives;
};

// When an active self-test may run beside other work on the GPUs (selftest.when).
enum class SelftestWhen {
  idle,    // default: a busy node's scheduled or on-start run is skipped (with why) and retried
  always,  // runs; a run that shared the GPUs is marked contended and judges nothing
  never,   // no scheduled or on-start run (passive health only); a forced request still runs
};
const char* to_string(SelftestWhen w);

// The scheduler's view of the node (selftest.scheduler): a command (argv, no shell) whose exit
// status 0 means idle and 1 busy (its first line of output says why), or a file whose presence
// means busy (its first line says why), e.g. one a Slurm prolog writes and its epilog removes.
struct SchedulerSpec {
  std::vector<std::string> command;
  std::optional<std::string> busy_file;
  std::chrono::nanoseconds timeout = std::chrono::seconds(10);
};

struct SelftestSpec {
  SelftestWhen when = SelftestWhen::idle;
  // A skipped run is tried again this long after the skip (never later than the schedule).
  std::chrono::nanoseconds retry_busy = std::chrono::minutes(15);
  std::optional<SchedulerSpec> scheduler;
  // Process names that never make the GPUs busy (monitoring agents holding a context).
  std::vector<std::string> ignore_processes;
  std::chrono::nanoseconds schedule = std::chrono::hours(6);
  std::chrono::nanoseconds time_limit = std::chrono::seconds(300);
  std::vector<std::string> cases;  // empty: the agent's default suite
  // pair class (PIX, PXB, PHB, NODE, SYS, NV, any); BAR: CPU stores through gdrcopy's mapping (bar_copy)
  std::map<std::string, Bandwidth> min_bandwidth;
  std::optional<std::chrono::nanoseconds> max_latency;
  std::uint64_t max_integrity_errors = 0;
  // Where min_bandwidth names no class of a pair (nor "any"): the threshold is this fraction of the
  // expected figure (ceiling x efficiency, pci/expectation). 0.85: the lowest healthy measurement
  // behind the efficiency table is 0.93 of its expectation (seed 001, across sockets); the H200
  // runs are at 1.00 +- 0.01. A link trained one step down (half) fails clearly.
  double min_fraction_of_expected = 0.85;
  // A bandwidth more than this fraction below the pair's baseline (median of its last
  // baseline_runs passing runs) is a regression warning, even above the threshold. Run-to-run
  // spread on the H200 node: 0.13 % peer, 1.7 % host copies.
  double max_drop_from_baseline = 0.10;
  int baseline_runs = 5;
};

// What the node may do by itself about a lost P2P path, rung by rung (remediation/ladder.hpp); off
// unless the profile names the rungs. The order is fixed: each rung is tried only after the one
// before it was taken and a self-test still failed.
enum class Rung { wait_idle, reset_gpu, reload_module, reboot };
struct RemediationSpec {
  std::vector<Rung> rungs;                                          // the rungs allowed, in ladder order
  std::chrono::nanoseconds idle_wait = std::chrono::hours(2);       // wait_idle: how long at most
  std::chrono::nanoseconds reboot_window = std::chrono::hours(24);  // at most one reboot in it
};
const char* to_string(Rung r);
std::optional<Rung> rung_from(std::string_view word);  // "reset_gpu" → Rung::reset_gpu

struct Profile {
  std::string name;
  std::string description;
  std::string source_file;  // where it was loaded from
  Match match;
  PlatformSpec platform;
  std::optional<DriverSpec> driver;
  std::optional<GdrcopySpec> gdrcopy;
  std::optional<NvmeSpec> nvme;
  std::optional<SelftestSpec> selftest;
  std::optional<RemediationSpec> remediation;
};

const char* to_string(IommuPolicy p);
const char* to_string(TopologyPolicy p);

}  // namespace p2pnode
