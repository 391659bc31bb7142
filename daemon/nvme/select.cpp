#include "nvme/select.hpp"

#include <map>

#include "core/text.hpp"

namespace p2pnode::nvme {

std::string trim(std::string s) {
  return std::string(p2pnode::trim(s, std::string_view(" \t\n\0", 4)));  // sysfs pads with NULs
}

Selection select_nvme_drives(const std::vector<NvmeDrive>& drives, const std::vector<ControllerIdentity>& ctrls) {
  Selection out;
  std::map<std::string, std::string> taken;  // bdf -> drive key
  for (const auto& d : drives) {
    std::vector<const ControllerIdentity*> hits;
    for (const auto& c : ctrls) {
      if (d.serial && (!c.serial || trim(*c.serial) != trim(*d.serial))) { continue; }
      if (d.model && (!c.model || trim(*c.model) != trim(*d.model))) { continue; }
      if (d.address && !(*d.address == c.bdf)) { continue; }
      hits.push_back(&c);
    }
    const std::string key = drive_key(d);
    if (hits.empty()) {
      out.problems.push_back("no NVMe controller matches the drive with " + key);
      continue;
    }
    if (hits.size() > 1) {
      std::string list;
      for (const auto* h : hits) { list += (list.empty() ? "" : ", ") + h->bdf; }
      out.problems.push_back("the drive with " + key + " matches " + std::to_string(hits.size()) + " controllers (" +
                             list + "); name it by serial");
      continue;
    }
    if (auto [it, fresh] = taken.emplace(hits[0]->bdf, key); !fresh) {
      out.problems.push_back(hits[0]->bdf + " is named twice (" + it->second + " and " + key + ")");
      continue;
    }
    out.selected.push_back({&d, hits[0]->bdf, key});
  }
  return out;
}

}  // namespace p2pnode::nvme
