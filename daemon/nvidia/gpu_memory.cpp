#include "nvidia/gpu_memory.hpp"

#include <cctype>
#include <regex>

namespace p2pnode::nvidia {

std::string sysfs_bus_id(std::string_view id) {
  static const std::regex re(R"(^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(id.begin(), id.end(), m, re)) { return {}; }
  std::string dom = m[1].str();
  if (dom.find_first_not_of('0', 0) != std::string::npos && dom.size() - dom.find_first_not_of('0') > 4) { return {}; }
  dom = dom.substr(dom.size() - 4);
  std::string out = dom + ":" + m[2].str() + ":" + m[3].str() + "." + m[4].str();
  for (auto& c : out) { c = static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
  return out;
}

Result<std::map<std::string, Bytes>> parse_smi_memory(std::string_view csv) {
  std::map<std::string, Bytes> out;
  std::size_t n = 0;
  while (!csv.empty()) {
    const auto nl = csv.find('\n');
    std::string line(csv.substr(0, nl));
    csv = nl == std::string_view::npos ? std::string_view() : csv.substr(nl + 1);
    ++n;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) { line.pop_back(); }
    if (line.empty()) { continue; }
    const auto comma = line.find(',');
    const std::string where = "nvidia-smi line " + std::to_string(n) + " '" + line + "'";
    if (comma == std::string::npos) { return Error{where + ": expected 'bus id, MiB'"}; }
    const std::string bdf = sysfs_bus_id(line.substr(0, comma));
    std::string mib = line.substr(comma + 1);
    mib.erase(0, mib.find_first_not_of(' '));
    if (bdf.empty()) { return Error{where + ": not a PCI bus id"}; }
    if (mib.empty() || mib.size() > 9 || mib.find_first_not_of("0123456789") != std::string::npos) {
      return Error{where + ": memory.total is not a number of MiB"};
    }
    out[bdf] = std::stoull(mib) * MiB;
  }
  return out;
}

}  // namespace p2pnode::nvidia
