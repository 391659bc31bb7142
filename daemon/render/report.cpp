#include "render/report.hpp"
#include "core/hex.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "nvidia/gpu_table.hpp"

namespace p2pnode::render {

namespace {
nlohmann::json device_json(const PciDevice& d) {
  nlohmann::json j = {{"bdf", d.bdf},
                      {"vendor_id", "0x" + hex4_bare(d.vendor)},
                      {"device_id", "0x" + hex4_bare(d.device)},
                      {"driver", d.driver},
                      {"numa_node", d.numa_node},
                      {"root_complex", d.root_complex},
                      {"upstream_bridges", d.upstream}};
  if (d.link.current_gts) { j["link_speed_gts"] = *d.link.current_gts; }
  if (d.link.current_width) { j["link_width"] = *d.link.current_width; }
  if (d.link.max_gts) { j["max_link_speed_gts"] = *d.link.max_gts; }
  if (d.link.max_width) { j["max_link_width"] = *d.link.max_width; }
  if (!d.power_state.empty()) { j["power_state"] = d.power_state; }
  if (const Bar* ap = d.vram_aperture()) { j["aperture_bytes"] = ap->size(); }
  if (auto m = nvidia::find_gpu_model(d.device); m && d.kind == DeviceKind::gpu) { j["name"] = m->name; }
  return j;
}
}  // namespace

nlohmann::json node_json(const Inventory& inv) {
  nlohmann::json gpus = nlohmann::json::array(), nvme = nlohmann::json::array();
  for (const auto* g : inv.gpus()) { gpus.push_back(device_json(*g)); }
  for (const auto* n : inv.nvme_controllers()) { nvme.push_back(device_json(*n)); }
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
  for (const auto& f : findings) { list.push_back(to_json(f)); }
  return {{"schema_version", kCheckSchemaVersion}, {"node", node_json(inv)}, {"profile", profile}, {"findings", list}};
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
  if (!line.empty()) { out += indent + line + "\n"; }
  return out;
}

namespace {
// "6 GPUs", "2 NVMe", "3 devices": what a group of subjects is, counted.
std::string count_subjects(const Inventory& inv, const std::vector<std::string>& subjects) {
  auto in = [](const std::vector<const PciDevice*>& ds, const std::string& s) {
    return std::any_of(ds.begin(), ds.end(), [&](const PciDevice* d) { return d->bdf == s; });
  };
  const auto all_gpus = inv.gpus(), all_nvme = inv.nvme_controllers();
  std::size_t gpus = 0, nvme = 0, bridges = 0;
  for (const auto& s : subjects) {
    gpus += in(all_gpus, s);
    nvme += in(all_nvme, s);
    const PciDevice* d = inv.find(s);
    bridges += d && (d->kind == DeviceKind::bridge || d->kind == DeviceKind::host_bridge);
  }
  const std::string n = std::to_string(subjects.size());
  if (gpus == subjects.size()) { return n + (gpus == 1 ? " GPU" : " GPUs"); }
  if (nvme == subjects.size()) { return n + " NVMe"; }
  if (bridges == subjects.size()) { return n + " bridges"; }
  if (gpus + nvme == 0 && std::all_of(subjects.begin(), subjects.end(), [&](const std::string& s) {
        return inv.find(s) == nullptr && !s.empty() && std::isdigit(static_cast<unsigned char>(s[0]));
      })) {
    return n + " kernels";
  }
  return n + " devices";
}

// The text with every occurrence of its subject replaced: what several subjects' texts share.
std::string without_subject(const std::string& text, const std::string& subject, const std::string& stand_in) {
  if (subject.empty()) { return text; }
  std::string out;
  std::size_t from = 0;
  for (std::size_t at; (at = text.find(subject, from)) != std::string::npos; from = at + subject.size()) {
    out += text.substr(from, at - from) + stand_in;
  }
  return out + text.substr(from);
}

constexpr const char* kStandIn = "<address>";
}  // namespace

std::vector<FindingRow> group_findings(const Inventory& inv, const std::vector<Finding>& findings) {
  std::vector<FindingRow> rows;
  for (const auto& f : findings) {
    const bool groupable = f.subject != "node" && !f.subject.empty();
    const std::string summary = without_subject(f.summary, f.subject, kStandIn);
    const std::string fix = without_subject(f.remediation, f.subject, kStandIn);
    auto same = std::find_if(rows.begin(), rows.end(), [&](const FindingRow& r) {
      const Finding& g = *r.first;
      return groupable && g.subject != "node" && g.check == f.check && g.severity == f.severity &&
             without_subject(g.summary, g.subject, kStandIn) == summary &&
             without_subject(g.remediation, g.subject, kStandIn) == fix;
    });
    if (same == rows.end()) {
      rows.push_back({&f, {f.subject}, f.subject, f.summary, f.remediation});
    } else {
      same->subjects.push_back(f.subject);
    }
  }
  for (auto& r : rows) {
    if (r.subjects.size() < 2) { continue; }
    r.subject = count_subjects(inv, r.subjects);
    const std::string stand_in = r.subject.ends_with(" kernels") ? "<kernel>" : kStandIn;
    r.summary = without_subject(r.first->summary, r.first->subject, stand_in);
    r.remediation = without_subject(r.first->remediation, r.first->subject, stand_in);
  }
  return rows;
}

std::string render_check_table(const Inventory& inv, const std::string& profile, const std::vector<Finding>& findings,
                               bool verbose) {
  std::ostringstream o;
  o << "p2pnode check: " << (inv.hostname.empty() ? "(no hostname)" : inv.hostname) << ", profile " << profile
    << ", kernel " << (inv.kernel.release.empty() ? "?" : inv.kernel.release) << "\n";
  o << inv.gpus().size() << " GPU(s), " << inv.nvme_controllers().size() << " NVMe controller(s), IOMMU "
    << to_string(inv.iommu.mode) << ", NVIDIA driver " << inv.nvidia.loaded_version.value_or("not loaded") << "\n\n";
  std::vector<FindingRow> rows;
  if (verbose) {
    for (const auto& f : findings) { rows.push_back({&f, {f.subject}, f.subject, f.summary, f.remediation}); }
  } else {
    rows = group_findings(inv, findings);
  }
  std::size_t check_w = 5, subject_w = 7;
  for (const auto& r : rows) {
    check_w = std::max(check_w, r.first->check.size());
    subject_w = std::max(subject_w, r.subject.size());
  }
  auto pad = [](const std::string& s, std::size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); };
  o << pad("RESULT", 8) << "  " << pad("CHECK", check_w) << "  " << pad("SUBJECT", subject_w) << "  SUMMARY\n";
  const std::string indent(12, ' ');
  for (const auto& r : rows) {
    const Finding& f = *r.first;
    const char* sev = f.severity == Severity::ok ? "ok" : f.severity == Severity::warning ? "WARNING" : "ERROR";
    o << pad(sev, 8) << "  " << pad(f.check, check_w) << "  " << pad(r.subject, subject_w) << "  " << r.summary << "\n";
    if (r.subjects.size() > 1 && f.severity != Severity::ok) {
      std::string list;
      for (const auto& s : r.subjects) { list += (list.empty() ? "" : ", ") + s; }
      o << wrap("on: " + list, 110, indent);
    }
    if (!r.remediation.empty()) { o << wrap("fix: " + r.remediation, 110, indent); }
  }
  int counts[3] = {0, 0, 0};
  for (const auto& f : findings) { ++counts[static_cast<int>(f.severity)]; }
  o << "\n" << counts[2] << " error(s), " << counts[1] << " warning(s), " << counts[0] << " ok";
  if (rows.size() < findings.size()) {
    o << " (" << findings.size() << " findings in " << rows.size() << " rows; --verbose lists each)";
  }
  o << "\n";
  return o.str();
}

}  // namespace p2pnode::render
