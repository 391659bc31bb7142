#include "p2pnode/agent/interconnect.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace p2pnode::agent {

const char* p2p_status_name(int s) {
  switch (s) {
    case 0: return "ok";
    case 1: return "chipset_not_supported";
    case 2: return "gpu_not_supported";
    case 3: return "ioh_topology_not_supported";
    case 4: return "disabled_by_regkey";
    case 5: return "not_supported";
    default: return "unknown";
  }
}

std::string normalize_bus_id(std::string_view id) {
  // [domain:]bus:device.function, hex; the domain may have 4 or 8 digits.
  std::string s;
  for (char c : id) {
    if (c == '\0') { break; }
    s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  const auto dot = s.rfind('.');
  const auto c2 = s.rfind(':');
  if (dot == std::string::npos || c2 == std::string::npos || c2 < 2 || dot < c2) { return {}; }
  const auto c1 = s.rfind(':', c2 - 1);
  std::string domain = c1 == std::string::npos ? "0000" : s.substr(0, c1);
  const std::string bus = s.substr(c1 == std::string::npos ? 0 : c1 + 1, c2 - (c1 == std::string::npos ? 0 : c1 + 1));
  const std::string dev = s.substr(c2 + 1, dot - c2 - 1), fn = s.substr(dot + 1);
  auto hex = [](const std::string& t) {
    return !t.empty() &&
           std::all_of(t.begin(), t.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
  };
  if (!hex(domain) || !hex(bus) || !hex(dev) || !hex(fn) || bus.size() > 2 || dev.size() > 2 || fn.size() != 1) {
    return {};
  }
  while (domain.size() > 4 && domain.front() == '0') { domain.erase(0, 1); }
  if (domain.size() > 4) { return {}; }
  domain.insert(0, 4 - domain.size(), '0');
  return domain + ":" + std::string(2 - bus.size(), '0') + bus + ":" + std::string(2 - dev.size(), '0') + dev + "." +
         fn;
}

std::vector<PairInterconnect> pairs_from_links(const std::vector<std::string>& bus_ids,
                                               const std::vector<std::vector<NvLinkRecord>>& links,
                                               const std::function<bool(int, int)>& nvlink_p2p_ok) {
  const int n = static_cast<int>(bus_ids.size());
  std::map<std::pair<int, int>, int> direct;
  std::vector<int> to_switch(static_cast<std::size_t>(n), 0);
  std::vector<unsigned> version(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n && i < static_cast<int>(links.size()); ++i) {
    for (const auto& l : links[static_cast<std::size_t>(i)]) {
      version[static_cast<std::size_t>(i)] = std::max(version[static_cast<std::size_t>(i)], l.version);
      const auto it = std::find(bus_ids.begin(), bus_ids.end(), l.remote_bus_id);
      const int j = it == bus_ids.end() ? -1 : static_cast<int>(it - bus_ids.begin());
      if (j < 0) {
        ++to_switch[static_cast<std::size_t>(i)];
      } else if (j != i) {
        ++direct[{std::min(i, j), std::max(i, j)}];
      }
    }
  }
  std::vector<PairInterconnect> out;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      PairInterconnect p;
      p.a = a;
      p.b = b;
      // Both ends report a direct link: count it once (from the lower index's records).
      const int d = direct.count({a, b}) ? direct[{a, b}] : 0;
      if (d > 0) {
        // each link was seen from both GPUs when both report it
        int from_a = 0;
        for (const auto& l : links[static_cast<std::size_t>(a)]) {
          if (l.remote_bus_id == bus_ids[static_cast<std::size_t>(b)]) { ++from_a; }
        }
        p.nvlinks = from_a > 0 ? from_a : d;
        p.nvlink_via = "direct";
      } else if (to_switch[static_cast<std::size_t>(a)] > 0 && to_switch[static_cast<std::size_t>(b)] > 0 &&
                 nvlink_p2p_ok(a, b)) {
        p.nvlinks = std::min(to_switch[static_cast<std::size_t>(a)], to_switch[static_cast<std::size_t>(b)]);
        p.nvlink_via = "nvswitch";
      }
      if (p.nvlinks > 0) {
        p.nvlink_version = std::min(version[static_cast<std::size_t>(a)], version[static_cast<std::size_t>(b)]);
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

nlohmann::json to_json(const Interconnect& ic) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& p : ic.pairs) {
    nlohmann::json st = nlohmann::json::object();
    for (const auto& [k, v] : p.p2p_status) { st[k] = v; }
    pairs.push_back({{"gpus", {p.a, p.b}},
                     {"link", p.nvlinks > 0 ? "NV" + std::to_string(p.nvlinks) : std::string("PCIe")},
                     {"nvlinks", p.nvlinks},
                     {"nvlink_version", p.nvlinks > 0 ? nlohmann::json(p.nvlink_version) : nlohmann::json()},
                     {"nvlink_via", p.nvlink_via.empty() ? nlohmann::json() : nlohmann::json(p.nvlink_via)},
                     {"p2p_status", std::move(st)}});
  }
  return {{"source", ic.source},
          {"reason", ic.reason.empty() ? nlohmann::json() : nlohmann::json(ic.reason)},
          {"nvml_driver_version",
           ic.nvml_driver_version.empty() ? nlohmann::json() : nlohmann::json(ic.nvml_driver_version)},
          {"pairs", std::move(pairs)}};
}

}  // namespace p2pnode::agent
