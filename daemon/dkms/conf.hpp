#pragma once
// dkms.conf as a value, and its text. Pure: the caller says what the source tree holds.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode::dkms {

struct BuiltModule {
  std::string name;      // nvidia-uvm (the .ko's file name without .ko)
  std::string location;  // "kernel-open/" (relative to the source root; "" = the root)
};

struct Conf {
  std::string package_name;
  std::string package_version;
  std::string make;                      // the MAKE[0] command, written with 'make' quoted
  std::vector<std::string> make_inputs;  // values from input inside `make` (checked by unsafe_value)
  std::vector<BuiltModule> modules;
  std::string dest_location = "/kernel/drivers/video";  // DKMS puts it in /updates/dkms on Debian
  std::vector<std::string> patches;                     // file names under <source>/patches/, applied in order
  std::vector<std::string> patch_match;  // PATCH_MATCH[i]: a kernel-release regex; "" or absent = every kernel
  // DKMS's own kernel hook (`dkms autoinstall`) fails a kernel package's configuration when the
  // module does not build: the kernel is left half-installed, run-parts stops before
  // initramfs-tools and update-grub, and apt fails until it is fixed. p2pnode's modules are built
  // for new kernels by its own hook (z50-p2pnode), which never fails an installation.
  bool autoinstall = false;
  std::string written_from = "driver.kernel_module";  // the profile's section, for the header line
};

enum class TreeKind { nvidia_open, kbuild, gdrdrv };

// What kind of tree a source directory is, from its top-level names: an open-gpu-kernel-modules
// checkout has kernel-open/ and src/; anything else is taken as one Kbuild directory.
TreeKind classify_tree(const std::vector<std::string>& top_level_entries);

// The NVIDIA modules present in kernel-open/, in build order.
std::vector<std::string> nvidia_modules(const std::vector<std::string>& kernel_open_entries);
// "obj-m += a.o b.o" names from a Kbuild/Makefile text.
std::vector<std::string> kbuild_modules(std::string_view makefile_text);
// NVIDIA_VERSION from version.mk ("NVIDIA_VERSION = 550.90.07").
std::optional<std::string> nvidia_tree_version(std::string_view version_mk);

// An open-gpu-kernel-modules tree. Without a prebuilt core, `make modules` at the root builds
// src/ (the kernel-independent core; the P2P patch lives there) and then kernel-open/ for each
// kernel. With one (kernel-open/*/*.o_binary placed in the source, nvidia/core.hpp), each kernel's
// build is kernel-open/ only.
Conf nvidia_open_conf(const std::string& name, const std::string& version, const std::vector<std::string>& modules,
                      const std::vector<std::string>& patches, bool prebuilt_core = false);
// One Kbuild directory (tests, small out-of-tree modules).
Conf kbuild_conf(const std::string& name, const std::string& version, const std::vector<std::string>& modules,
                 const std::vector<std::string>& patches);

// gdrdrv's version from src/gdrdrv/gdrdrv.h (GDRDRV_MAJOR_VERSION, GDRDRV_MINOR_VERSION: "2.6"),
// the release's first two numbers.
std::optional<std::string> gdrdrv_header_version(std::string_view gdrdrv_h);

// gdrcopy's release tree: gdrdrv (src/gdrdrv, whose Makefile runs gdrcopy's conftests from
// scripts/) built against the NVIDIA tree's kernel-open/nvidia (nv-p2p.h) in the open flavour.
// Only gdrdrv.ko is installed (nv-p2p-dummy.ko, built beside it for modpost, is not).
Conf gdrdrv_conf(const std::string& name, const std::string& version, const std::string& nvidia_src_dir);

// Every value single-quoted (grammar::shell_quote). DKMS's safe_source then echoes each value
// inside "…" and sources it again, and evals MAKE[0]: unsafe_value says which value would not
// survive that (call it first: render does not refuse).
std::string render(const Conf& conf);
std::optional<std::string> unsafe_value(const Conf& conf);

// A staged dkms.conf that still asks DKMS's own kernel hook to build the module (an AUTOINSTALL
// line, as p2pnode wrote before it built new kernels through its own hook only): the text without
// that line; nullopt when it has none.
std::optional<std::string> without_autoinstall(std::string_view conf_text);

}  // namespace p2pnode::dkms
