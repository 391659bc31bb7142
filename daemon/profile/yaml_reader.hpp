#pragma once
// A strict reader over yaml-cpp nodes: every error names the file, line, column, the key path,
// what was expected and what was found; unknown keys get the closest known key suggested.
#include <yaml-cpp/yaml.h>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/units.hpp"

namespace p2pnode::profile {

struct Diagnostic {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based
  std::string key_path;
  std::string message;
  std::string format() const;  // "file:12:5: platform.iommu: expected …"
};

class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}
  void add(const YAML::Node& at, const std::string& path, std::string message);
  void add(int line, int column, const std::string& path, std::string message);
  bool empty() const { return list_.empty(); }
  const std::vector<Diagnostic>& list() const { return list_; }
  const std::string& file() const { return file_; }
  std::string format() const;  // one line per diagnostic

 private:
  std::string file_;
  std::vector<Diagnostic> list_;
};

// Parses text into a YAML document after the cheap sanity checks (size, NUL bytes, UTF-8, tabs
// in indentation); adds a diagnostic and returns nullopt on failure.
std::optional<YAML::Node> parse_yaml_text(std::string_view text, Diagnostics& diag, std::size_t max_bytes = 1 << 20);

// A mapping whose keys are checked against a fixed list.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path, Diagnostics& diag,
            std::initializer_list<std::string_view> known_keys);
  bool valid() const { return valid_; }
  const std::string& path() const { return path_; }
  std::string child_path(std::string_view key) const;
  const YAML::Node& node() const { return node_; }

  bool has(std::string_view key) const;
  YAML::Node get(std::string_view key) const;  // undefined node when absent

  std::optional<std::string> string(std::string_view key, bool required = false);
  std::optional<bool> boolean(std::string_view key);
  std::optional<long long> integer(std::string_view key, long long min, long long max);
  std::optional<Bytes> size(std::string_view key);
  std::optional<Bandwidth> bandwidth(std::string_view key);
  std::optional<std::chrono::nanoseconds> duration(std::string_view key);
  // One of the given words.
  std::optional<std::string> choice(std::string_view key, std::initializer_list<std::string_view> words);
  std::vector<std::string> string_list(std::string_view key);
  // A sub-mapping, or nullopt (with a diagnostic if present but not a mapping).
  std::optional<MapReader> map(std::string_view key, std::initializer_list<std::string_view> known);
  // A sequence of nodes (empty with a diagnostic if not a sequence).
  std::vector<YAML::Node> sequence(std::string_view key);
  void require(std::string_view key);

  Diagnostics& diag() { return diag_; }

 private:
  std::optional<std::string> scalar(std::string_view key, const char* expected);
  YAML::Node node_;
  std::string path_;
  Diagnostics& diag_;
  bool valid_ = true;
};

// Closest word by edit distance (nullopt when nothing is close).
std::optional<std::string> closest(std::string_view word, const std::vector<std::string_view>& known);
// "0x10de" or "10de" (hex) or a decimal integer, to a 16-bit PCI id.
std::optional<std::uint16_t> parse_pci_id(std::string_view text);
std::string describe_node(const YAML::Node& n);  // "a mapping", "'abc'", "a sequence"

}  // namespace p2pnode::profile
