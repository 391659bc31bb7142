#include <algorithm>

#include "pci/config_space.hpp"
#include "pci/sysfs_decode.hpp"
#include "probe/probe.hpp"

namespace p2pnode::probe {
using sys::join;

namespace {
constexpr const char* kDevices = "/sys/bus/pci/devices";

// Reads a hex attribute; a missing or garbage file is noted in problems.
template <typename T>
T read_hex_attr(const sys::SysRoot& root, const std::string& dir, const char* name, PciDevice& d) {
  auto text = root.read_attr(join(dir, name));
  if (!text) {
    d.problems.push_back(std::string(name) + ": " + text.error().message);
    return T{};
  }
  auto v = pci::parse_hex(*text);
  if (!v || *v > static_cast<std::uint64_t>(static_cast<T>(~T{}))) {
    d.problems.push_back(std::string(name) + ": '" + text->substr(0, 40) + "' is not a hex number");
    return T{};
  }
  return static_cast<T>(*v);
}

// The names in a device's sysfs directory: one listing instead of an open() per optional
// attribute that a kernel or device lacks (resourceN_resize, link attributes, driver, …).
struct Entries {
  std::vector<std::string> names;  // sorted
  bool has(std::string_view n) const { return std::binary_search(names.begin(), names.end(), n); }
};

// The target's last component of a symlink in dir ("driver" -> "nvidia"), or "" when absent.
std::string link_name(const sys::SysRoot& root, const std::string& dir, const Entries& e, const char* name) {
  if (!e.has(name)) { return {}; }
  auto target = root.read_link(join(dir, name));
  if (!target) { return {}; }
  const auto slash = target->rfind('/');
  return slash == std::string::npos ? *target : target->substr(slash + 1);
}

void read_link_attrs(const sys::SysRoot& root, const std::string& dir, const Entries& e, PciDevice& d) {
  auto speed = [&](const char* name, std::optional<double>& out) {
    if (!e.has(name)) { return; }
    if (auto t = root.read_attr(join(dir, name))) {
      out = pci::parse_link_speed(*t);
      if (!out && *t != "Unknown" && t->rfind("Unknown", 0) != 0) {
        d.problems.push_back(std::string(name) + ": '" + t->substr(0, 40) + "' is not a link speed");
      }
    }
  };
  auto width = [&](const char* name, std::optional<int>& out) {
    if (!e.has(name)) { return; }
    if (auto t = root.read_attr(join(dir, name))) {
      out = pci::parse_int(*t);
      if (!out) { d.problems.push_back(std::string(name) + ": '" + t->substr(0, 40) + "' is not a width"); }
    }
  };
  speed("current_link_speed", d.link.current_gts);
  speed("max_link_speed", d.link.max_gts);
  width("current_link_width", d.link.current_width);
  width("max_link_width", d.link.max_width);
}

// "/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0" -> root "pci0000:00", upstream ["0000:00:01.1"].
void split_path(PciDevice& d) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  const std::string& p = d.sysfs_path;
  while (pos < p.size()) {
    auto slash = p.find('/', pos);
    if (slash == std::string::npos) { slash = p.size(); }
    if (slash > pos) { parts.push_back(p.substr(pos, slash - pos)); }
    pos = slash + 1;
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].rfind("pci", 0) == 0 && parts[i].find(':') != std::string::npos) {
      d.root_complex = parts[i];
      for (std::size_t j = i + 1; j + 1 < parts.size(); ++j) {
        if (is_pci_address(parts[j])) { d.upstream.push_back(parts[j]); }
      }
      return;
    }
  }
}
}  // namespace

PciDevice probe_pci_device(const sys::SysRoot& root, const std::string& bdf) {
  PciDevice d;
  d.bdf = bdf;
  const std::string link = join(kDevices, bdf);
  if (auto real = root.resolve_link(link)) {
    d.sysfs_path = *real;
  } else {
    d.problems.push_back("path: " + real.error().message);
  }
  const std::string dir = d.sysfs_path.empty() ? link : d.sysfs_path;
  split_path(d);
  const Entries e{root.list_dir(dir)};

  d.vendor = read_hex_attr<std::uint16_t>(root, dir, "vendor", d);
  d.device = read_hex_attr<std::uint16_t>(root, dir, "device", d);
  d.class_code = read_hex_attr<std::uint32_t>(root, dir, "class", d);
  d.subsystem_vendor = read_hex_attr<std::uint16_t>(root, dir, "subsystem_vendor", d);
  d.subsystem_device = read_hex_attr<std::uint16_t>(root, dir, "subsystem_device", d);
  if (e.has("revision")) { d.revision = read_hex_attr<std::uint8_t>(root, dir, "revision", d); }
  d.kind = pci::classify(d.vendor, d.class_code);

  if (auto text = root.read_text(join(dir, "resource"))) {
    if (auto bars = pci::decode_resource_table(*text)) {
      d.bars = *bars;
    } else {
      d.problems.push_back("resource: " + bars.error().message);
    }
  } else {
    d.problems.push_back("resource: " + text.error().message);
  }
  for (int i = 0; i < 6; ++i) {
    const std::string name = "resource" + std::to_string(i) + "_resize";
    if (!e.has(name)) { continue; }
    if (auto t = root.read_attr(join(dir, name))) { d.resize_attrs[i] = *t; }
  }
  read_link_attrs(root, dir, e, d);
  if (e.has("numa_node")) {
    if (auto t = root.read_attr(join(dir, "numa_node"))) { d.numa_node = pci::parse_int(*t).value_or(-1); }
  }
  d.driver = link_name(root, dir, e, "driver");
  if (auto g = link_name(root, dir, e, "iommu_group"); !g.empty()) { d.iommu_group = g; }
  d.power_state = root.read_attr(join(dir, "power_state")).value_or("");
  d.power_control = root.read_attr(join(dir, "power/control")).value_or("");

  if (auto cfg = root.read_bytes(join(dir, "config"), 4096)) {
    d.config = std::move(cfg).value();
    d.config_size = d.config.size();
    if (d.config_size < 64) {
      d.problems.push_back("config: only " + std::to_string(d.config_size) + " bytes (truncated)");
    }
  } else {
    d.problems.push_back("config: " + cfg.error().message);
  }
  if (d.config_size >= 64) {
    d.rebar = pci::decode_rebar(d.config);
    d.rebar_hidden = d.config_size < 4096 || pci::ext_caps_hidden(d.config);
    d.acs = pci::decode_acs(d.config);
    // Fill link maxima from config space when sysfs lacks them.
    const LinkInfo cfg_link = pci::decode_pcie_link(d.config);
    if (!d.link.max_gts) { d.link.max_gts = cfg_link.max_gts; }
    if (!d.link.max_width) { d.link.max_width = cfg_link.max_width; }
  }
  return d;
}

std::vector<PciDevice> probe_pci_devices(const sys::SysRoot& root) {
  std::vector<PciDevice> out;
  for (const auto& bdf : root.list_dir(kDevices)) {
    if (is_pci_address(bdf)) { out.push_back(probe_pci_device(root, bdf)); }
  }
  std::sort(out.begin(), out.end(), [](const PciDevice& a, const PciDevice& b) { return a.bdf < b.bdf; });
  return out;
}

}  // namespace p2pnode::probe
