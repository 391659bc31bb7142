// gdrcopy.bar1, gdrcopy.flavour, gdrcopy.backend: what gdrcopy needs of the node, for a profile
// with a gdrcopy section (gdrcopy/needs.hpp decides the figures).
#include <cstdio>

#include "checks/check.hpp"
#include "gdrcopy/needs.hpp"

namespace p2pnode::checks {
namespace {

std::string octal(unsigned mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

// Where p2pnode stages the module's source (lifecycle: /usr/src/<name>-<version>); gdrdrv's build
// takes the directory with nv-p2p.h.
std::string nvidia_src_dir(const Profile& p) {
  if (!p.driver || !p.driver->kernel_module) return "<the NVIDIA module's source>/kernel-open/nvidia";
  return "/usr/src/" + p.driver->kernel_module->name + "-" + p.driver->version + "/kernel-open/nvidia";
}

std::string build_by_hand(const Profile& p) {
  return "Build and load gdrdrv against the staged source (p2pnode apply does not build gdrdrv yet): in gdrcopy-" +
         p.gdrcopy->version + "/src/gdrdrv, `make KVER=$(uname -r) NVIDIA_SRC_DIR=" + nvidia_src_dir(p) +
         " NVIDIA_IS_OPENSOURCE=y`, then `insmod gdrdrv.ko` after nvidia.";
}

std::string driver_version(const Profile& p, const Inventory& inv) {
  if (inv.nvidia.userspace_version) return *inv.nvidia.userspace_version;
  if (inv.nvidia.loaded_version) return *inv.nvidia.loaded_version;
  return p.driver ? p.driver->version : std::string();
}

}  // namespace

std::vector<Finding> check_gdrcopy_bar1(const Profile& p, const Inventory& inv) {
  if (!p.gdrcopy) return {};
  std::vector<Finding> out;
  const Bytes need = gdrcopy::pin_footprint(p.gdrcopy->pin);
  for (const PciDevice* gpu : inv.gpus()) {
    const Bar* bar = gpu->vram_aperture();
    if (!bar) {
      Finding f = make_finding("gdrcopy.bar1", gpu->bdf, Severity::warning,
                               "no 64-bit prefetchable memory BAR (BAR1) is assigned: gdrcopy cannot map this GPU's memory");
      f.remediation = "See rebar.aperture and pcie findings for this GPU: its BAR1 is not assigned (BIOS: Above 4G "
                      "Decoding).";
      out.push_back(f);
      continue;
    }
    const Bytes room = gdrcopy::pinnable(bar->size());
    const bool fits = room >= need;
    Finding f = make_finding(
        "gdrcopy.bar1", gpu->bdf, fits ? Severity::ok : Severity::error,
        "BAR1 is " + format_size(bar->size()) + ": the driver keeps " + format_size(gdrcopy::kBar1Reserve) + " of it free, so at most " +
            format_size(room) + " can be pinned; gdrcopy.pin is " + format_size(need) + (fits ? "" : ", which does not fit"));
    f.observed = {{"bar1_bytes", bar->size()}, {"pinnable_bytes", room}};
    f.expected = {{"pin_bytes", need}, {"reserve_bytes", gdrcopy::kBar1Reserve}};
    if (!fits)
      f.remediation = "Enable Resizable BAR so that BAR1 covers VRAM (rebar.capability says how for this GPU), or lower "
                      "gdrcopy.pin to at most " + format_size(room) + ". BAR1 is shared with P2P and CUDA's own mappings.";
    out.push_back(f);
  }
  return out;
}

std::vector<Finding> check_gdrcopy_flavour(const Profile& p, const Inventory& inv) {
  if (!p.gdrcopy) return {};
  const auto& nv = inv.nvidia;
  const auto& g = inv.gdrdrv;
  Finding f = make_finding("gdrcopy.flavour", "node", Severity::ok, "");
  auto opt = [](const std::optional<bool>& b) { return b ? nlohmann::json(*b) : nlohmann::json(nullptr); };
  f.observed = {{"nvidia_loaded", nv.loaded_version.value_or("")}, {"nvidia_open", opt(nv.open_module)},
                {"gdrdrv_loaded", g.loaded}, {"gdrdrv_open", opt(g.open_flavour)}};
  f.expected = {{"nvidia_open", true}, {"gdrdrv_open", true}};
  if (!nv.loaded_version) {
    f.severity = Severity::warning;
    f.summary = "no NVIDIA module is loaded: gdrdrv, built for the open module of driver.kernel_module, loads only after it";
    f.remediation = "Load the profile's module (p2pnode apply loads it), then gdrdrv.";
  } else if (nv.open_module == false) {
    f.severity = Severity::error;
    f.summary = "the proprietary NVIDIA module " + *nv.loaded_version + " is loaded: gdrdrv built against driver.kernel_module's "
                "open source does not load beside it (it binds the open module's GPL symbols)";
    f.remediation = "Replace the proprietary module with the profile's open one: p2pnode apply installs it "
                    "(driver.reload.allow: true lets it swap a loaded module).";
  } else if (g.loaded && g.open_flavour == false) {
    f.severity = Severity::error;
    f.summary = "the loaded gdrdrv " + g.version.value_or("") + " was built for the proprietary NVIDIA module, and the open module " +
                *nv.loaded_version + " runs: the open module's mappings (PAT, confidential computing) go unhandled";
    f.remediation = "Unload it and build gdrdrv against the staged open source. " + build_by_hand(p);
  } else {
    f.summary = "the open NVIDIA module " + *nv.loaded_version + " is loaded" +
                (g.loaded ? ", and gdrdrv " + g.version.value_or("") + " built for it" : ": gdrdrv is built for it (open flavour)");
  }
  return {f};
}

std::vector<Finding> check_gdrcopy_backend(const Profile& p, const Inventory& inv) {
  if (!p.gdrcopy) return {};
  const auto& g = inv.gdrdrv;
  const auto& want = *p.gdrcopy;
  Finding f = make_finding("gdrcopy.backend", "node", Severity::ok, "");
  f.observed = {{"gdrdrv_loaded", g.loaded}, {"gdrdrv_version", g.version.value_or("")},
                {"major", g.major ? nlohmann::json(*g.major) : nlohmann::json(nullptr)}, {"device_node", g.device_node},
                {"device_mode", g.device_mode ? octal(*g.device_mode) : ""}, {"device_owner", g.device_owner},
                {"device_group", g.device_group}};
  f.expected = {{"backend", "gdrdrv or dma-buf"}, {"device_mode", octal(want.device_mode)},
                {"device_owner", want.device_owner}, {"device_group", want.device_group}};
  const std::string mknod = g.major ? "mknod -m " + octal(want.device_mode) + " /dev/gdrdrv c " + std::to_string(*g.major) +
                                          " 0 && chown " + want.device_owner + ":" + want.device_group + " /dev/gdrdrv"
                                    : std::string("mknod /dev/gdrdrv with gdrdrv's major from /proc/devices");
  if (g.loaded) {
    const std::string what = "gdrdrv " + g.version.value_or("") + " is loaded";
    if (!g.device_node || !g.device_is_char) {
      f.severity = Severity::error;
      f.summary = what + (g.device_node ? ", but /dev/gdrdrv is not a character device" : ", but /dev/gdrdrv is missing") +
                  ": libgdrapi cannot open it (gdrdrv registers a bare major; nothing but its loader makes the node)";
      f.remediation = "Make it: " + mknod + ".";
    } else if (g.device_mode != want.device_mode || g.device_owner != want.device_owner || g.device_group != want.device_group) {
      f.severity = Severity::warning;
      f.summary = what + "; /dev/gdrdrv is " + octal(g.device_mode.value_or(0)) + " " + g.device_owner + ":" + g.device_group +
                  ", the profile asks " + octal(want.device_mode) + " " + want.device_owner + ":" + want.device_group;
      f.remediation = "chmod " + octal(want.device_mode) + " /dev/gdrdrv && chown " + want.device_owner + ":" + want.device_group +
                      " /dev/gdrdrv";
    } else {
      f.summary = what + ": the gdrdrv backend, /dev/gdrdrv " + octal(want.device_mode) + " " + want.device_owner + ":" +
                  want.device_group;
    }
    return {f};
  }
  const auto v = gdrcopy::dmabuf_support(driver_version(p, inv));
  f.observed["dmabuf"] = v.support == gdrcopy::DmaBuf::unavailable ? "unavailable" : "unknown";
  if (v.cuda) f.observed["cuda"] = *v.cuda;
  f.severity = v.support == gdrcopy::DmaBuf::unavailable ? Severity::error : Severity::warning;
  f.summary = "gdrdrv is not loaded, and " + v.why +
              (v.support == gdrcopy::DmaBuf::unavailable ? ": gdrcopy has no backend (gdr_open fails)" : "");
  f.remediation = build_by_hand(p) + " Then " + mknod + ".";
  return {f};
}

}  // namespace p2pnode::checks
