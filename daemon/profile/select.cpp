#include "profile/select.hpp"
#include "core/hex.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>

namespace p2pnode::profile {

std::vector<std::string> match_mismatches(const Profile& p, const Inventory& inv) {
  std::vector<std::string> why;
  if (const auto& g = p.match.gpus) {
    int n = 0;
    for (const auto* d : inv.gpus()) {
      if (g->vendor && d->vendor != *g->vendor) { continue; }
      if (!g->devices.empty() && std::find(g->devices.begin(), g->devices.end(), d->device) == g->devices.end()) {
        continue;
      }
      ++n;
    }
    std::string ids;
    for (auto id : g->devices) { ids += (ids.empty() ? "" : "/") + hex4(id); }
    if (g->count && n != *g->count) {
      why.push_back("wants " + std::to_string(*g->count) + " GPUs" + (ids.empty() ? "" : " " + ids) + ", found " +
                    std::to_string(n));
    } else if (!g->count && n == 0) {
      why.push_back("wants GPUs" + (ids.empty() ? std::string() : " " + ids) + ", found none");
    }
  }
  if (p.match.hostname && fnmatch(p.match.hostname->c_str(), inv.hostname.c_str(), 0) != 0) {
    why.push_back("hostname '" + inv.hostname + "' does not match '" + *p.match.hostname + "'");
  }
  for (const auto& [field, glob] : p.match.dmi) {
    auto it = inv.dmi.find(field);
    const std::string have = it == inv.dmi.end() ? "" : it->second;
    if (fnmatch(glob.c_str(), have.c_str(), 0) != 0) {
      why.push_back("dmi " + field + " '" + have + "' does not match '" + glob + "'");
    }
  }
  return why;
}

Result<const Profile*> select_profile(const std::vector<Profile>& profiles, const Inventory& inv) {
  std::vector<const Profile*> hits;
  std::string misses;
  for (const auto& p : profiles) {
    const auto why = match_mismatches(p, inv);
    if (why.empty()) {
      hits.push_back(&p);
      continue;
    }
    misses += "\n  " + p.name + " (" + p.source_file + "): ";
    for (std::size_t i = 0; i < why.size(); ++i) { misses += (i ? "; " : "") + why[i]; }
  }
  if (hits.size() == 1) { return hits.front(); }
  if (profiles.empty()) { return Error{"no profiles to choose from"}; }
  if (hits.empty()) {
    return Error{"no profile matches this box (" + inv.hostname + ", " + std::to_string(inv.gpus().size()) +
                 " GPUs):" + misses};
  }
  std::string names;
  for (const auto* h : hits) { names += "\n  " + h->name + " (" + h->source_file + ")"; }
  return Error{std::to_string(hits.size()) + " profiles match this box; make their match sections exclusive:" + names};
}

}  // namespace p2pnode::profile
