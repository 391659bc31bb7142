#include "core/hex.hpp"
#include "render/report.hpp"

#include <cstdio>
#include <sstream>

#include "nvidia/gpu_table.hpp"

namespace p2pnode::render {

namespace {
nlohmann::json device_json(const PciDevice& d) {
  nlohmann::json j = {{"bdf", d.bdf}, {"vendor_id", "0x" + hex4_bare(d.vendor)}, {"device_id", "0x" + hex4_bare(d.device)},
                      {"driver", d.driver}, {"numa_node", d.numa_node}, {"root_complex", d.root_complex},
                      {"upstream_bridges", d.upstream}};
  if (d.link.current_gts) j["link_speed_gts"] = *d.link.current_gts;
  if (d.link.current_width) j["link_width"] = *d.link.current_width;
  if (d.link.max_gts) j["max_link_speed_gts"] = *d.link.max_gts;
  if (d.link.max_width) j["max_link_width"] = *d.link.max_width;
  if (!d.power_state.empty()) j["power_state"] = d.power_state;
  if (const Bar* ap = d.vram_aperture()) j["aperture_bytes"] = ap->size();
  if (auto m = nvidia::find_gpu_model(d.device); m && d.kind == DeviceKind::gpu) j["name"] = m->name;
  return j;
}
}  // namespace

nlohmann::json node_json(const Inventory& inv) {
  nlohmann::json gpus = nlohmann::json::array(), nvme = nlohmann::json::array();
  for (const auto* g : inv.gpus()) gpus.push_back(device_json(*g));
  for (const auto* n : inv.nvme_controllers()) nvme.push_back(device_json(*n));
  return {{"hostname", inv.hostname},
          {"kernel", inv.kernel.release},
          {"iommu", to_string(inv.iommu.mode)},
          {"driver_version", inv.nvidia.loaded_version.value_or("")},
          {"gpus", gpus},
          {"nvme", nvme}};
}

nlohmann::json check_report_json(const Inventory& inv, const std::string& profile,
                                 const std::vector<Finding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : findings) list.push_back(to_json(f));
  return {{"schema_version", kCheckSchemaVersion}, {"node", node_json(inv)}, {"profile", profile},
          {"findings", list}};
}

std::string wrap(const std::string& text, std::size_t width, const std::string& indent) {
  std::istringstream words(text);
  std::string word, line, out;
  while (words >> word) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

std::string render_check_table(const Inventory& inv, const std::string& profile,
                               const std::vector<Finding>& findings) {
  std::ostringstream o;
  o << "p2pnode check: " << (inv.hostname.empty() ? "(no hostname)" : inv.hostname) << ", profile " << profile
    << ", kernel " << (inv.kernel.release.empty() ? "?" : inv.kernel.release) << "\n";
  o << inv.gpus().size() << " GPU(s), " << inv.nvme_controllers().size() << " NVMe controller(s), IOMMU "
    << to_string(inv.iommu.mode) << ", NVIDIA driver " << inv.nvidia.loaded_version.value_or("not loaded") << "\n\n";
  std::size_t check_w = 5, subject_w = 7;
  for (const auto& f : findings) {
    check_w = std::max(check_w, f.check.size());
    subject_w = std::max(subject_w, f.subject.size());
  }
  auto pad = [](const std::string& s, std::size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); };
  o << pad("RESULT", 8) << "  " << pad("CHECK", check_w) << "  " << pad("SUBJECT", subject_w) << "  SUMMARY\n";
  int counts[3] = {0, 0, 0};
  for (const auto& f : findings) {
    ++counts[static_cast<int>(f.severity)];
    const char* sev = f.severity == Severity::ok ? "ok" : f.severity == Severity::warning ? "WARNING" : "ERROR";
    o << pad(sev, 8) << "  " << pad(f.check, check_w) << "  " << pad(f.subject, subject_w) << "  " << f.summary << "\n";
    if (!f.remediation.empty()) o << wrap("fix: " + f.remediation, 110, std::string(12, ' '));
  }
  o << "\n" << counts[2] << " error(s), " << counts[1] << " warning(s), " << counts[0] << " ok\n";
  return o.str();
}

}  // namespace p2pnode::render
