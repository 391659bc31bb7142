#pragma once
// What discovery saw on the box: plain data, filled by probe/, read by checks and the planner.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace p2pnode {

struct Bar {
  int index = 0;  // resource index (0-5 BARs, 6 ROM)
  std::uint64_t start = 0, end = 0, flags = 0;
  std::uint64_t size() const { return end >= start && (start || end) ? end - start + 1 : 0; }
  bool is_mem() const { return flags & 0x200; }
  bool is_io() const { return flags & 0x100; }
  bool is_prefetch() const { return flags & 0x2000; }
  bool is_64bit() const { return flags & 0x100000; }
};

struct LinkInfo {
  std::optional<double> current_gts, max_gts;  // GT/s
  std::optional<int> current_width, max_width;
};

struct RebarEntry {
  int bar = 0;
  std::uint64_t supported_mask = 0;  // bit n: 2^(n+20) bytes
  std::uint64_t current_size = 0;
  std::uint64_t largest_supported() const;
};

struct AcsInfo {
  std::uint16_t capability = 0, control = 0;
  int offset = 0;
  // P2P request/completion redirect, upstream forwarding, egress control: what the ACS fix clears.
  bool redirects() const { return control & 0x3C; }
};

enum class DeviceKind { gpu, gpu_function, nvme, bridge, host_bridge, other };

struct PciDevice {
  std::string bdf;
  std::string sysfs_path;  // resolved, in-root: /sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0
  std::uint16_t vendor = 0, device = 0, subsystem_vendor = 0, subsystem_device = 0;
  std::uint32_t class_code = 0;
  std::uint8_t revision = 0;
  DeviceKind kind = DeviceKind::other;
  std::vector<Bar> bars;
  LinkInfo link;
  int numa_node = -1;
  std::string driver;       // bound driver name, empty when none
  std::string power_state;  // D0, D3hot, …
  std::string power_control;
  std::string root_complex;           // "pci0000:00"
  std::vector<std::string> upstream;  // bridge BDFs from the root port down to the parent
  std::size_t config_size = 0;        // bytes readable from `config`
  std::vector<std::uint8_t> config;
  std::vector<RebarEntry> rebar;
  bool rebar_hidden = false;  // ext-cap area unreadable or zeroed (virtualised)
  std::optional<AcsInfo> acs;
  std::map<int, std::string> resize_attrs;  // BAR index -> contents of resourceN_resize
  std::optional<std::string> iommu_group;
  std::vector<std::string> problems;  // attributes that were missing or garbage

  // The VRAM aperture: the largest 64-bit prefetchable memory BAR (not a fixed index).
  const Bar* vram_aperture() const;
};

enum class IommuMode { off, passthrough, translating, unknown };
const char* to_string(IommuMode m);

struct IommuState {
  IommuMode mode = IommuMode::unknown;
  std::vector<std::string> units;          // /sys/class/iommu entries (dmar0, ivhd0, …)
  std::vector<std::string> acpi_tables;    // DMAR, IVRS present
  std::vector<std::string> cmdline_args;   // the iommu-related kernel arguments
  std::map<std::string, int> group_types;  // "identity" -> 3, "DMA-FQ" -> 5
  int group_count = 0;
  bool noiommu_groups = false;        // /dev/vfio/noiommu-* present
  std::vector<std::string> evidence;  // human-readable reasons for the decision
};

struct KernelInfo {
  std::string release;  // 6.1.0-56-amd64
  std::string version;  // /proc/version
  std::string cmdline;
  std::optional<bool> vfio_noiommu_param;  // enable_unsafe_noiommu_mode present (vfio loaded)
  std::optional<bool> noiommu_configured;  // CONFIG_VFIO_NOIOMMU from /boot/config-*
  std::string distro;                      // ID from /etc/os-release
};

struct NvidiaDriverState {
  std::optional<std::string> loaded_version;     // /sys/module/nvidia/version
  std::optional<std::string> proc_version_line;  // first line of /proc/driver/nvidia/version
  std::optional<bool> open_module;
  std::optional<std::string> builder;            // user@host
  std::optional<std::string> userspace_version;  // libcuda.so.X.Y.Z found
  std::string
      userspace_source;  // which source answered: ld.so.cache, libdir, ldconfig -p, nvidia-smi (nvidia/userspace.hpp)
  std::string userspace_path;                           // the libcuda file that answered, when a file did
  std::vector<std::string> modules_loaded;              // nvidia, nvidia_uvm, …
  std::map<std::string, std::string> modprobe_options;  // NVreg_* -> value, from /etc/modprobe.d
  std::vector<std::string> gsp_firmware_versions;       // /lib/firmware/nvidia/<ver>/
  // Open module trees in /usr/src -> whether their source refuses a peer DMA address not aligned at
  // 512 MiB (nvidia/peer_alignment.hpp; nullopt: the file is there, the check is not recognised).
  std::map<std::string, std::optional<bool>> peer_alignment;
  // Module trees staged in /usr/src, and the profile's own tree where it lies on the machine
  // (profile_tree) -> the breakage table's source tests on them (breakage id -> the tree is
  // affected; nvidia/forecast.hpp).
  std::map<std::string, std::map<std::string, bool>> source_tests;
  // The profile's module tree read where it lies: its path: folder, or p2pnode's git checkout of it
  // (probe::use_profile_tree); a key of source_tests, or empty.
  std::string profile_tree;
};

// gdrcopy's kernel module on the running kernel, and its device node (probe/gdrcopy_probe.cpp).
struct GdrdrvState {
  bool loaded = false;                  // /sys/module/gdrdrv
  std::optional<std::string> version;   // /sys/module/gdrdrv/version
  std::optional<bool> open_flavour;     // /proc/driver/gdrdrv/params: built for the open NVIDIA module
  std::optional<int> major;             // /proc/devices
  bool device_node = false;             // /dev/gdrdrv exists
  bool device_is_char = false;          // ... and is a character device
  std::optional<unsigned> device_mode;  // its permission bits
  std::optional<int> device_major;      // the device it names (a node left from an earlier load names an old major)
  unsigned device_uid = 0, device_gid = 0;
  std::string device_owner, device_group;  // names from the root's /etc/passwd and /etc/group, else the ids
};

// One DKMS package/version for one kernel, from /var/lib/dkms/<package>/<version>/<kernel>/<arch>/module
// (built) and /lib/modules/<kernel>/updates/dkms (installed: every built module is there).
struct DkmsOnKernel {
  std::string package, version;
  bool built = false, installed = false;
  std::vector<std::string> modules;  // the installed files, /lib/modules/<k>/updates/dkms/<f>
  // Every installed module carries a signature (`modinfo -F signer`); read only where Secure Boot
  // enforces signatures (probe_module_signatures_by_commands), unknown elsewhere.
  std::optional<bool> signed_modules;
  std::string signer;  // the first module's signer, when signed
};

// A DKMS build that failed for one kernel (p2pnode keeps its make.log under
// /var/lib/p2pnode/dkms/failed/<package>/<version>/<kernel>/make.log).
struct FailedBuild {
  std::string package, version;
  std::string make_log;                // in-root path
  std::string first_error;             // the first compiler error line, if any
  std::vector<std::string> breakages;  // known breakages it matches (id: cause. Fix: remediation)
};

struct InstalledKernel {
  std::string release;   // 6.1.0-56-amd64
  bool headers = false;  // /lib/modules/<k>/build
  bool running = false;
  bool next_boot = false;  // the kernel the boot loader starts next
  std::vector<DkmsOnKernel> dkms;
  std::vector<FailedBuild> failed;
  // The breakage table's header tests on this kernel's headers (breakage id -> the header shows it);
  // only entries whose header file could be read (nvidia/breakage.hpp predict_breakages).
  std::map<std::string, bool> header_tests;
  // The compiler the headers were made with (CONFIG_CC_VERSION_TEXT of build/include/config/auto.conf
  // or include/generated/autoconf.h; dkms/kernel_compiler.hpp), which DKMS builds with; empty when
  // the headers do not say. compiler_present: /usr/bin/<compiler_command> exists.
  std::string compiler_text, compiler_command, compiler_package;
  bool compiler_present = true;
  // nvidia.ko (.ko.xz/.zst/.gz) files under /lib/modules/<k> (updates/, updates/dkms/, extra/,
  // kernel/drivers/video/) that no DKMS package installed: the .run installer's copies (in-root paths).
  std::vector<std::string> foreign_nvidia;
  // The file modprobe loads for "nvidia": modules.dep's entry, in-root; "" when modules.dep has none.
  std::string modprobe_nvidia;
};

// The kernel apt would install next, as p2pnode judged it before it was installed
// (lifecycle/next_kernel.hpp; the record /var/lib/p2pnode/next-kernel.json).
struct NextKernelJudged {
  std::string release, package_version, module;  // 6.1.0-57-amd64, 6.1.200-1, nvidia-p2p/550.90.07
  bool keeps_p2p = false;
  std::string summary, first_error, make_log;
  std::vector<std::string> breakages, fixes;  // known breakage ids, their builtin patches
};

// Secure Boot as the firmware, the kernel and DKMS describe it (probe/secureboot_probe.cpp).
struct SecureBootState {
  bool efi = false;                 // /sys/firmware/efi: booted through UEFI
  std::optional<bool> enabled;      // the SecureBoot variable
  std::optional<bool> setup_mode;   // the SetupMode variable (keys not yet enrolled: not enforcing)
  std::string lockdown;             // none, integrity, confidentiality; "" when the kernel has no LSM file
  std::optional<bool> sig_enforce;  // /sys/module/module/parameters/sig_enforce
  std::string key_path, cert_path;  // the key and DER certificate DKMS signs with
  bool key_from_config = false;     // /etc/dkms/framework.conf(.d) named them
  bool key_from_profile = false;    // the profile's driver.kernel_module.signing named them
  bool key_present = false, cert_present = false;
  std::string key_problem;  // the key is readable beyond its owner, not root's, or a link (sys/private_file.hpp)
  std::optional<bool> cert_enrolled;  // the certificate is in MokListRT (shim's enrolled keys)
  std::optional<bool> cert_queued;    // the certificate is in MokNew (mokutil --import, not yet confirmed)
  std::string problem;                // what could not be read
};

struct KernelsState {
  std::optional<NextKernelJudged> next_candidate;
  std::vector<InstalledKernel> kernels;  // newest first
  std::string next_boot;                 // release, empty when unknown
  std::string next_boot_how;             // how it was decided (grub.cfg default, newest vmlinuz)
  bool boot_guard_held = false;          // p2pnode holds GRUB's default (lifecycle/boot_guard.hpp)
};

// How the driver connects two GPUs, beyond what sysfs shows: NVLink (direct or through NVSwitch),
// as the self-test agent read it through NVML. Empty when no agent result says so.
struct GpuInterconnect {
  std::string a, b;           // the two GPUs' BDFs, a < b
  int nvlinks = 0;            // active NVLinks between them; 0: PCIe only
  int nvlink_generation = 0;  // 1 … 5; 0 unknown
};

// An NVMe controller's identity (nvme/select.hpp matches the profile's drives against these).
struct NvmeControllerIdentity {
  std::string bdf;
  std::string driver;                 // nvme, vfio-pci, "" when none
  std::optional<std::string> serial;  // trimmed
  std::optional<std::string> model;   // trimmed
  bool remembered = false;            // serial/model from /var/lib/p2pnode/nvme-serials.json
};

// One namespace or partition of an NVMe controller and who uses it (probe_nvme_usage).
struct BlockDeviceUse {
  std::string name;                       // nvme1n1, nvme1n1p2, nvme0c0n1
  std::vector<std::string> mountpoints;   // from /proc/self/mountinfo and /proc/mounts
  std::vector<std::string> holders;       // /sys/class/block/<name>/holders: dm-0, md127
  bool swap = false;                      // listed in /proc/swaps
  std::optional<std::string> signature;   // decode_block_signature() of /dev/<name>
  std::optional<std::string> unreadable;  // why /dev/<name> could not be read (signature unknown)
  bool hidden = false;                    // a multipath path node: no /dev entry of its own
  std::vector<std::string> open_by;       // processes holding /dev/<name> open: "1234 (qemu-system-x86)"
};

struct NvmeControllerUse {
  std::string bdf;
  std::vector<std::string> controllers;  // nvme1 (several for odd multi-controller functions)
  std::vector<BlockDeviceUse> block_devices;
};

struct Inventory {
  std::string hostname;
  std::map<std::string, std::string> dmi;
  KernelInfo kernel;
  IommuState iommu;
  NvidiaDriverState nvidia;
  GdrdrvState gdrdrv;
  KernelsState kernels;            // installed kernels, the next boot one, DKMS builds per kernel
  SecureBootState secure_boot;     // Secure Boot, lockdown and the key DKMS signs modules with
  std::vector<PciDevice> devices;  // sorted by BDF
  // NVMe controllers: every one's identity, and the use of the block devices of those on the
  // nvme driver (what an unbind would take away; nvme.binding names it when the profile wants one).
  std::vector<NvmeControllerIdentity> nvme_identities;
  std::vector<NvmeControllerUse> nvme_usage;
  std::vector<std::string> problems;
  // VRAM each GPU reports about itself (bytes, by BDF): the agent's memory_bytes (CUDA) or nvidia-smi's
  // memory.total; empty when no driver answered. rebar.aperture prefers it where the model table differs.
  std::map<std::string, std::uint64_t> gpu_memory;
  std::string gpu_memory_source;               // "agent (self-test of …)", "nvidia-smi"
  std::vector<GpuInterconnect> interconnects;  // merged from the last agent result (engine)
  std::string interconnect_source;             // "nvml (agent …)", or why there is none

  std::vector<const PciDevice*> gpus() const;
  const GpuInterconnect* interconnect(const std::string& a, const std::string& b) const;
  std::vector<const PciDevice*> nvme_controllers() const;
  const PciDevice* find(const std::string& bdf) const;
};

}  // namespace p2pnode
