// gdrcopy.bar1, gdrcopy.flavour, gdrcopy.backend, gdrcopy.kernels: what gdrcopy needs of the node,
// for a profile with a gdrcopy section (gdrcopy/needs.hpp decides the figures).
#include <algorithm>

#include "checks/check.hpp"
#include "gdrcopy/device.hpp"
#include "gdrcopy/needs.hpp"
#include "lifecycle/gdrdrv.hpp"

namespace p2pnode::checks {
namespace {

using gdrcopy::same_account;
std::string octal(unsigned mode) { return gdrcopy::octal_mode(mode); }

std::string nvidia_src_dir(const Profile& p) {
  if (!p.driver || !p.driver->kernel_module) { return "<the NVIDIA module's source>/kernel-open/nvidia"; }
  return lifecycle::gdrdrv_nvidia_src_dir(*p.driver);
}

std::string build_by_hand(const Profile& p) {
  return "`p2pnode apply` builds gdrdrv " + p.gdrcopy->version +
         " through DKMS for every kernel with headers (gdrcopy.module: "
         "make NVIDIA_SRC_DIR=" +
         nvidia_src_dir(p) +
         " NVIDIA_IS_OPENSOURCE=y), loads it after nvidia and makes "
         "/dev/gdrdrv (gdrcopy.device).";
}

std::string gdrdrv_name(const GdrdrvState& g) { return g.version ? "gdrdrv " + *g.version : std::string("gdrdrv"); }

}  // namespace

std::vector<Finding> check_gdrcopy_bar1(const Profile& p, const Inventory& inv) {
  if (!p.gdrcopy) { return {}; }
  std::vector<Finding> out;
  const Bytes need = gdrcopy::pin_footprint(p.gdrcopy->pin);
  const std::string pin =
      format_size(p.gdrcopy->pin) + (need != p.gdrcopy->pin ? " (" + format_size(need) + " in 64 KiB pages)" : "");
  for (const PciDevice* gpu : inv.gpus()) {
    const Bar* bar = gpu->vram_aperture();
    if (!bar) {
      Finding f =
          make_finding("gdrcopy.bar1", gpu->bdf, Severity::warning,
                       "no 64-bit prefetchable memory BAR (BAR1) is assigned: gdrcopy cannot map this GPU's memory");
      f.remediation =
          "See rebar.aperture and the pcie findings for this GPU: its BAR1 is not assigned (BIOS: Above 4G "
          "Decoding).";
      out.push_back(f);
      continue;
    }
    const Bytes room = gdrcopy::pinnable(bar->size());
    const bool fits = room >= need;
    Finding f = make_finding("gdrcopy.bar1", gpu->bdf, fits ? Severity::ok : Severity::error,
                             "BAR1 is " + format_size(bar->size()) + ": the driver keeps " +
                                 format_size(gdrcopy::kBar1Reserve) + " of it free, so at most " + format_size(room) +
                                 " can be pinned (less what CUDA and P2P map); gdrcopy.pin is " + pin +
                                 (fits ? "" : ", which does not fit"));
    f.observed = {{"bar1_bytes", bar->size()}, {"pinnable_bytes", room}};
    f.expected = {{"pin_bytes", need}, {"reserve_bytes", gdrcopy::kBar1Reserve}};
    if (!fits) {
      f.remediation = "Enable Resizable BAR so that BAR1 covers VRAM (rebar.capability says how for this GPU)" +
                      (room ? ", or lower gdrcopy.pin to at most " + format_size(room) : std::string()) +
                      ". BAR1 is shared with P2P and CUDA's own mappings.";
    }
    out.push_back(f);
  }
  return out;
}

std::vector<Finding> check_gdrcopy_flavour(const Profile& p, const Inventory& inv) {
  if (!p.gdrcopy) { return {}; }
  const auto& nv = inv.nvidia;
  const auto& g = inv.gdrdrv;
  Finding f = make_finding("gdrcopy.flavour", "node", Severity::ok, "");
  auto opt = [](const std::optional<bool>& b) { return b ? nlohmann::json(*b) : nlohmann::json(nullptr); };
  f.observed = {{"nvidia_loaded", nv.loaded_version.value_or("")},
                {"nvidia_open", opt(nv.open_module)},
                {"gdrdrv_loaded", g.loaded},
                {"gdrdrv_open", opt(g.open_flavour)}};
  f.expected = {{"nvidia_open", true}, {"gdrdrv_open", true}};
  if (!nv.loaded_version) {
    f.severity = Severity::warning;
    f.summary =
        "no NVIDIA module is loaded: gdrdrv, built for the open module of driver.kernel_module, loads only after it";
    f.remediation = "Load the profile's module (p2pnode apply loads it), then gdrdrv.";
  } else if (!nv.open_module) {
    f.severity = Severity::warning;
    f.summary = "the NVIDIA module " + *nv.loaded_version +
                " is loaded, but whether it is the open one is not known "
                "(/proc/driver/nvidia/version unread): gdrdrv is built for the open one";
    f.remediation = "Read /proc/driver/nvidia/version: \"Open Kernel Module\" is the open one.";
  } else if (!*nv.open_module) {
    f.severity = Severity::error;
    f.summary =
        "the proprietary NVIDIA module " + *nv.loaded_version +
        " is loaded: gdrdrv built for the open one uses "
        "GPL-only kernel symbols, and a module that does may not use a proprietary module's (Linux 5.9+), so it "
        "does not load beside it";
    f.remediation =
        "Replace the proprietary module with the profile's open one: p2pnode apply installs it "
        "(driver.reload.allow: true lets it swap a loaded module).";
  } else if (g.loaded && !g.open_flavour) {
    f.severity = Severity::warning;
    f.summary = "the open NVIDIA module " + *nv.loaded_version + " is loaded; the flavour the loaded " +
                gdrdrv_name(g) + " was built for is not known (/proc/driver/gdrdrv/params unread)";
    f.remediation = "Read /proc/driver/gdrdrv/params (\"Built for NVIDIA driver flavor\").";
  } else if (g.loaded && !*g.open_flavour) {
    f.severity = Severity::error;
    f.summary = "the loaded " + gdrdrv_name(g) + " was built for the proprietary NVIDIA module, and the open module " +
                *nv.loaded_version + " runs: the open module's mappings (PAT, confidential computing) go unhandled";
    f.remediation = "Unload it (rmmod gdrdrv); " + build_by_hand(p);
  } else {
    f.summary = "the open NVIDIA module " + *nv.loaded_version + " is loaded" +
                (g.loaded ? ", and " + gdrdrv_name(g) + " built for it"
                          : ": the one gdrdrv is built for (gdrdrv is not loaded: gdrcopy.backend)");
  }
  return {f};
}

std::vector<Finding> check_gdrcopy_backend(const Profile& p, const Inventory& inv) {
  if (!p.gdrcopy) { return {}; }
  const auto& g = inv.gdrdrv;
  const auto& want = *p.gdrcopy;
  Finding f = make_finding("gdrcopy.backend", "node", Severity::ok, "");
  auto opt_int = [](const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  f.observed = {{"gdrdrv_loaded", g.loaded},
                {"gdrdrv_version", g.version.value_or("")},
                {"major", opt_int(g.major)},
                {"device_node", g.device_node},
                {"device_major", opt_int(g.device_major)},
                {"device_mode", g.device_mode ? octal(*g.device_mode) : ""},
                {"device_owner", g.device_owner},
                {"device_group", g.device_group}};
  f.expected = {{"backend", "gdrdrv or dma-buf"},
                {"gdrdrv_version", want.version},
                {"device_mode", octal(want.device_mode)},
                {"device_owner", want.device_owner},
                {"device_group", want.device_group}};
  const std::string major = g.major ? std::to_string(*g.major) : "<gdrdrv's major in /proc/devices>";
  const std::string mknod = "mknod -m " + octal(want.device_mode) + " /dev/gdrdrv c " + major + " 0 && chown " +
                            want.device_owner + ":" + want.device_group + " /dev/gdrdrv";
  if (g.loaded) {
    const std::string what = gdrdrv_name(g) + " is loaded";
    if (!g.device_node || !g.device_is_char || (g.major && g.device_major != g.major)) {
      f.severity = Severity::error;
      f.summary = what +
                  (!g.device_node      ? ", but /dev/gdrdrv is missing"
                   : !g.device_is_char ? ", but /dev/gdrdrv is not a character device"
                                       : ", but /dev/gdrdrv names major " + std::to_string(g.device_major.value_or(0)) +
                                             " and gdrdrv has " + major + " (a node left from an earlier load)") +
                  ": libgdrapi cannot open it (gdrdrv registers a bare major; nothing but its loader makes the node)";
      f.remediation = "Make it: " + std::string(g.device_node ? "rm -f /dev/gdrdrv && " : "") + mknod + ".";
    } else if (g.device_mode != want.device_mode || !same_account(want.device_owner, g.device_owner, g.device_uid) ||
               !same_account(want.device_group, g.device_group, g.device_gid)) {
      f.severity = Severity::warning;
      f.summary = what + "; /dev/gdrdrv is " + octal(g.device_mode.value_or(0)) + " " + g.device_owner + ":" +
                  g.device_group + ", the profile asks " + octal(want.device_mode) + " " + want.device_owner + ":" +
                  want.device_group;
      f.remediation = "chmod " + octal(want.device_mode) + " /dev/gdrdrv && chown " + want.device_owner + ":" +
                      want.device_group + " /dev/gdrdrv";
    } else if (g.version && *g.version != want.version) {
      f.severity = Severity::warning;
      f.summary = what + ", the profile asks gdrcopy " + want.version + ": libgdrapi " + want.version +
                  " refuses a gdrdrv older than its minimum, and a newer one may answer differently";
      f.remediation = build_by_hand(p);
    } else {
      f.summary = what + ": the gdrdrv backend, /dev/gdrdrv " + octal(want.device_mode) + " " + want.device_owner +
                  ":" + want.device_group;
    }
    return {f};
  }
  // Without gdrdrv: the dma-buf backend, if the driver's CUDA version allows it.
  const bool observed = inv.nvidia.userspace_version || inv.nvidia.loaded_version;
  const std::string version = inv.nvidia.userspace_version ? *inv.nvidia.userspace_version
                              : inv.nvidia.loaded_version  ? *inv.nvidia.loaded_version
                              : p.driver                   ? p.driver->version
                                                           : std::string();
  const auto v = gdrcopy::dmabuf_support(version);
  f.observed["dmabuf"] = v.support == gdrcopy::DmaBuf::unavailable ? "unavailable" : "unknown";
  if (v.cuda) { f.observed["cuda"] = *v.cuda; }
  f.severity = v.support == gdrcopy::DmaBuf::unavailable ? Severity::error : Severity::warning;
  f.summary = "gdrdrv is not loaded, and " + std::string(observed || version.empty() ? "" : "the profile's ") + v.why +
              (v.support == gdrcopy::DmaBuf::unavailable ? ": gdrcopy has no backend (gdr_open fails)" : "");
  f.remediation = build_by_hand(p) + " By hand, after loading it: " + mknod + ".";
  return {f};
}

std::vector<Finding> check_gdrcopy_kernels(const Profile& p, const Inventory& inv) {
  if (!p.gdrcopy || !p.driver || !p.driver->kernel_module) { return {}; }
  const std::string want = std::string(lifecycle::kGdrdrvPackage) + "/" + p.gdrcopy->version;
  std::vector<Finding> out;
  for (const auto& k : inv.kernels.kernels) {
    Finding f = make_finding("gdrcopy.kernels", k.release, Severity::ok,
                             want + " is built and installed by DKMS for " + k.release);
    f.expected = {{"module", want}, {"state", "installed"}};
    f.observed = {{"headers", k.headers}, {"running", k.running}, {"next_boot", k.next_boot}};
    const bool installed = std::any_of(k.dkms.begin(), k.dkms.end(), [&](const DkmsOnKernel& d) {
      return d.package == lifecycle::kGdrdrvPackage && d.version == p.gdrcopy->version && d.installed;
    });
    if (installed) {
      out.push_back(std::move(f));
      continue;
    }
    const FailedBuild* failed = nullptr;
    for (const auto& fb : k.failed) {
      if (fb.package == lifecycle::kGdrdrvPackage && fb.version == p.gdrcopy->version) { failed = &fb; }
    }
    f.severity = Severity::error;
    const std::string after = k.next_boot && !k.running ? "; a reboot now would come up without gdrcopy's backend" : "";
    if (failed) {
      f.summary = want + " is not installed for " + k.release + ": its DKMS build failed" +
                  (failed->first_error.empty() ? "" : ": " + failed->first_error) + after;
      f.observed["make_log"] = failed->make_log;
      f.remediation = "Read " + failed->make_log + " (gdrdrv is built against " +
                      lifecycle::gdrdrv_nvidia_src_dir(*p.driver) +
                      "); a newer gdrcopy release may support this kernel (gdrcopy.version and gdrcopy.source), then "
                      "`p2pnode apply`.";
    } else if (!k.headers) {
      f.summary =
          want + " is not installed for " + k.release + ": the kernel has no headers, so DKMS cannot build it" + after;
      f.remediation =
          "Install linux-headers-" + k.release + ", then `p2pnode apply` (it builds for every kernel with headers).";
    } else {
      f.summary = want + " is not installed for " + k.release + after;
      f.remediation = "Run `p2pnode apply`: it builds and installs " + want + " through DKMS for " + k.release +
                      " (gdrcopy.module).";
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace p2pnode::checks
