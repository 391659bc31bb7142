#include "dkms/initramfs.hpp"

#include <algorithm>
#include <sstream>

namespace p2pnode::dkms {
namespace {

std::string normalized(std::string s) {
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

// `name` as a whole word of `text` (module names in scripts: "nvidia_drm", "nvidia-drm.ko").
bool mentions(const std::string& text, const std::string& name) {
  const std::string t = normalized(text), n = normalized(name);
  for (auto pos = t.find(n); pos != std::string::npos; pos = t.find(n, pos + 1)) {
    const bool left = pos == 0 || !is_word_char(t[pos - 1]);
    const auto end = pos + n.size();
    const bool right = end == t.size() || !is_word_char(t[end]);
    if (left && right) { return true; }
  }
  return false;
}

}  // namespace

std::string initramfs_pulls_in(const std::vector<std::string>& modules, const InitramfsConfig& config) {
  std::istringstream in(config.modules_file);
  std::string line;
  while (std::getline(in, line)) {
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') { continue; }
    const auto word = normalized(line.substr(start, line.find_first_of(" \t", start) - start));
    for (const auto& m : modules) {
      if (normalized(m) == word) { return m; }
    }
  }
  for (const auto& text : config.hook_texts) {
    for (const auto& m : modules) {
      if (mentions(text, m)) { return m; }
    }
  }
  return {};
}

}  // namespace p2pnode::dkms
