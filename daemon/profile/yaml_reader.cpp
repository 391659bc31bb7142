#include "profile/yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "core/utf8.hpp"
#include "profile/yaml_limits.hpp"

namespace p2pnode::profile {

std::string Diagnostic::format() const {
  std::string s = file;
  if (line > 0) { s += ":" + std::to_string(line) + ":" + std::to_string(column); }
  s += ": ";
  if (!key_path.empty()) { s += key_path + ": "; }
  return s + message;
}

void Diagnostics::add(const YAML::Node& at, const std::string& path, std::string message) {
  const YAML::Mark m = at.IsDefined() ? at.Mark() : YAML::Mark::null_mark();
  add(m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0, path, std::move(message));
}

void Diagnostics::add(int line, int column, const std::string& path, std::string message) {
  list_.push_back({file_, line, column, path, std::move(message)});
}

std::string Diagnostics::format() const {
  std::string s;
  for (const auto& d : list_) { s += d.format() + "\n"; }
  return s;
}

namespace {
std::pair<int, int> line_col(std::string_view s, std::size_t offset) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < s.size(); ++i) {
    if (s[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}
}  // namespace

std::optional<YAML::Node> parse_yaml_text(std::string_view text, Diagnostics& diag, std::size_t max_bytes) {
  if (text.size() > max_bytes) {
    diag.add(0, 0, "",
             "the file is " + std::to_string(text.size()) + " bytes; a profile is at most " +
                 std::to_string(max_bytes) + " bytes");
    return std::nullopt;
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    diag.add(0, 0, "", "the file is empty; expected a YAML mapping with apiVersion, kind and metadata");
    return std::nullopt;
  }
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    const auto [l, c] = line_col(text, nul);
    diag.add(l, c, "", "the file contains a NUL byte: it is binary, not YAML text");
    return std::nullopt;
  }
  if (const auto bad = utf8::first_invalid(text)) {
    const auto [l, c] = line_col(text, *bad);
    diag.add(l, c, "",
             "the file is not valid UTF-8 at byte " + std::to_string(*bad) +
                 " (expected UTF-8 text: no Latin-1 or binary bytes, overlong forms, surrogates or code "
                 "points above U+10FFFF)");
    return std::nullopt;
  }
  // YAML forbids tabs in indentation; say so plainly instead of yaml-cpp's generic message.
  std::size_t line_start = 0;
  int line_no = 1;
  while (line_start < text.size()) {
    std::size_t i = line_start;
    while (i < text.size() && text[i] == ' ') { ++i; }
    if (i < text.size() && text[i] == '\t') {
      diag.add(line_no, static_cast<int>(i - line_start + 1), "",
               "a tab is used for indentation; YAML indents with spaces only");
      return std::nullopt;
    }
    const auto nl = text.find('\n', line_start);
    if (nl == std::string_view::npos) { break; }
    line_start = nl + 1;
    ++line_no;
  }
  if (const auto breach = find_yaml_limit_breach(text)) {
    diag.add(breach->line, breach->column, "", breach->message);
    return std::nullopt;
  }
  try {
    YAML::Node root = YAML::Load(std::string(text));
    return root;
  } catch (const YAML::Exception& e) {
    diag.add(e.mark.line >= 0 ? e.mark.line + 1 : 0, e.mark.column >= 0 ? e.mark.column + 1 : 0, "",
             "YAML syntax error: " + e.msg);
    return std::nullopt;
  }
}

std::string describe_node(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) { return "nothing (null)"; }
  if (n.IsMap()) { return "a mapping"; }
  if (n.IsSequence()) { return "a list"; }
  return "'" + n.Scalar() + "'";
}

std::optional<std::string> closest(std::string_view word, const std::vector<std::string_view>& known) {
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) { prev[j] = j; }
    for (std::size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const bool same =
            std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
      }
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::optional<std::string> best;
  std::size_t best_d = std::string_view::npos;
  for (auto k : known) {
    const std::size_t d = distance(word, k);
    // A third of the longer word may differ: 'passthru' still finds 'passthrough'.
    const std::size_t limit = std::max<std::size_t>(2, std::max(word.size(), k.size()) / 3) + 1;
    if (d < limit && d < best_d) {
      best_d = d;
      best = std::string(k);
    }
  }
  return best;
}

std::optional<std::uint16_t> parse_pci_id(std::string_view t) {
  int base = 16;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    t.remove_prefix(2);
  } else if (t.find_first_not_of("0123456789") == std::string_view::npos) {
    base = 10;
  }
  unsigned v = 0;
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size() || v > 0xFFFF) { return std::nullopt; }
  return static_cast<std::uint16_t>(v);
}

MapReader::MapReader(const YAML::Node& node, std::string path, Diagnostics& diag,
                     std::initializer_list<std::string_view> known_keys)
    : node_(node), path_(std::move(path)), diag_(diag) {
  if (!node_.IsMap()) {
    diag_.add(node_, path_, "expected a mapping, found " + describe_node(node_));
    valid_ = false;
    return;
  }
  std::vector<std::string_view> known(known_keys);
  std::set<std::string> seen;
  for (const auto& kv : node_) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
    if (!kv.first.IsScalar()) {
      diag_.add(kv.first, path_, "a key must be a plain word, found " + describe_node(kv.first));
      continue;
    }
    if (!seen.insert(key).second) {
      diag_.add(kv.first, child_path(key), "duplicate key '" + key + "' (each key may appear once)");
    }
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string msg = "unknown key '" + key + "'";
      if (auto best = closest(key, known)) {
        msg += "; did you mean '" + *best + "'?";
      } else {
        msg += "; known keys here: ";
        for (std::size_t i = 0; i < known.size(); ++i) { msg += (i ? ", " : "") + std::string(known[i]); }
      }
      diag_.add(kv.first, child_path(key), msg);
    }
  }
}

std::string MapReader::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool MapReader::has(std::string_view key) const { return valid_ && node_[std::string(key)].IsDefined(); }

YAML::Node MapReader::get(std::string_view key) const {
  if (!valid_) { return YAML::Node(YAML::NodeType::Undefined); }
  return node_[std::string(key)];
}

void MapReader::require(std::string_view key) {
  if (valid_ && !has(key)) { diag_.add(node_, child_path(key), "required key '" + std::string(key) + "' is missing"); }
}

std::optional<std::string> MapReader::scalar(std::string_view key, const char* expected) {
  const YAML::Node n = get(key);
  if (!n.IsDefined()) { return std::nullopt; }
  if (!n.IsScalar()) {
    diag_.add(n, child_path(key), std::string("expected ") + expected + ", found " + describe_node(n));
    return std::nullopt;
  }
  return n.Scalar();
}

std::optional<std::string> MapReader::string(std::string_view key, bool required) {
  if (required) { require(key); }
  auto s = scalar(key, "a string");
  if (s && s->empty()) {
    diag_.add(get(key), child_path(key), "expected a non-empty string");
    return std::nullopt;
  }
  return s;
}

std::optional<bool> MapReader::boolean(std::string_view key) {
  auto s = scalar(key, "true or false");
  if (!s) { return std::nullopt; }
  if (*s == "true") { return true; }
  if (*s == "false") { return false; }
  diag_.add(get(key), child_path(key), "expected true or false, found '" + *s + "'");
  return std::nullopt;
}

std::optional<long long> MapReader::integer(std::string_view key, long long min, long long max) {
  auto s = scalar(key, "an integer");
  if (!s) { return std::nullopt; }
  long long v = 0;
  const auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || p != s->data() + s->size() || v < min || v > max) {
    diag_.add(
        get(key), child_path(key),
        "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", found '" + *s + "'");
    return std::nullopt;
  }
  return v;
}

template <typename T, typename Parse>
static std::optional<T> typed(MapReader& r, std::optional<std::string> s, std::string_view key, Parse parse) {
  if (!s) { return std::nullopt; }
  auto v = parse(*s);
  if (!v) {
    r.diag().add(r.get(key), r.child_path(key), v.error().message);
    return std::nullopt;
  }
  return *v;
}

std::optional<Bytes> MapReader::size(std::string_view key) {
  return typed<Bytes>(*this, scalar(key, "a size such as 32GiB"), key, parse_size);
}

std::optional<Bandwidth> MapReader::bandwidth(std::string_view key) {
  return typed<Bandwidth>(*this, scalar(key, "a bandwidth such as 25GB/s"), key, parse_bandwidth);
}

std::optional<std::chrono::nanoseconds> MapReader::duration(std::string_view key) {
  return typed<std::chrono::nanoseconds>(*this, scalar(key, "a duration such as 2us or 6h"), key, parse_duration);
}

std::optional<std::string> MapReader::choice(std::string_view key, std::initializer_list<std::string_view> words) {
  auto s = scalar(key, "a word");
  if (!s) { return std::nullopt; }
  if (std::find(words.begin(), words.end(), *s) != words.end()) { return s; }
  std::string msg = "expected one of ";
  std::size_t i = 0;
  for (auto w : words) { msg += (i++ ? ", " : "") + std::string(w); }
  msg += "; found '" + *s + "'";
  if (auto best = closest(*s, std::vector<std::string_view>(words))) { msg += " (did you mean '" + *best + "'?)"; }
  diag_.add(get(key), child_path(key), msg);
  return std::nullopt;
}

std::vector<std::string> MapReader::string_list(std::string_view key) {
  std::vector<std::string> out;
  const YAML::Node n = get(key);
  if (!n.IsDefined()) { return out; }
  if (!n.IsSequence()) {
    diag_.add(n, child_path(key), "expected a list of strings, found " + describe_node(n));
    return out;
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) {
      diag_.add(n[i], child_path(key) + "[" + std::to_string(i) + "]",
                "expected a string, found " + describe_node(n[i]));
      continue;
    }
    out.push_back(n[i].Scalar());
  }
  return out;
}

std::optional<MapReader> MapReader::map(std::string_view key, std::initializer_list<std::string_view> known) {
  const YAML::Node n = get(key);
  if (!n.IsDefined() || n.IsNull()) { return std::nullopt; }
  MapReader sub(n, child_path(key), diag_, known);
  if (!sub.valid()) { return std::nullopt; }
  return sub;
}

std::vector<YAML::Node> MapReader::sequence(std::string_view key) {
  std::vector<YAML::Node> out;
  const YAML::Node n = get(key);
  if (!n.IsDefined() || n.IsNull()) { return out; }
  if (!n.IsSequence()) {
    diag_.add(n, child_path(key), "expected a list, found " + describe_node(n));
    return out;
  }
  for (std::size_t i = 0; i < n.size(); ++i) { out.push_back(n[i]); }
  return out;
}

}  // namespace p2pnode::profile
