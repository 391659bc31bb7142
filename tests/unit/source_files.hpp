// Reading the repository's own files (recorded agent results, fixtures) from unit tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace p2pnode::test_files
