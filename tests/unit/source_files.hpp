// Reading the repository's own files (recorded agent results, fixtures) from unit tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace p2pnode::test_files {

inline const std::filesystem::path kSrc = P2PNODE_SOURCE_DIR;
inline const std::string kSrcDir = P2PNODE_SOURCE_DIR;  // the same, for string concatenation

// The whole file, or "" when it cannot be read (the parse under test then says why).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(slurp(p)); }

// The real 2x H200 NVLink run (tests/unit/agent/data/h200x2-nv18.json; its README says where it
// came from), with the bandwidth figures of its CE write 0->1 cell scaled by `factor` (0.54: what
// a copy job beside it left).
inline nlohmann::json nv18_run(double factor = 1.0) {
  nlohmann::json d = read_json(kSrc / "tests/unit/agent/data/h200x2-nv18.json");
  if (factor == 1.0) { return d; }
  for (auto& c : d["cases"]) {
    if (c["key"] != "ce_write_bandwidth") { continue; }
    for (auto& cell : c["cells"]) {
      if (cell["src"] != 0 || cell["dst"] != 1) { continue; }
      for (const char* k : {"median", "mean", "min", "max", "p10", "p90"}) {
        cell["bandwidth_gbps"][k] = cell["bandwidth_gbps"][k].get<double>() * factor;
      }
    }
  }
  return d;
}

}  // namespace p2pnode::test_files
