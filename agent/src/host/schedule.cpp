#include "p2pnode/agent/schedule.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <string_view>

namespace p2pnode::agent {

std::vector<Pair> ordered_pairs(int n) {
  std::vector<Pair> out;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j) { out.push_back({i, j}); }
    }
  }
  return out;
}

std::vector<Pair> unordered_pairs(int n) {
  std::vector<Pair> out;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) { out.push_back({i, j}); }
  }
  return out;
}

std::vector<Round> circle_rounds(int n) {
  std::vector<Round> rounds;
  if (n < 2) { return rounds; }
  // With an odd count add a dummy slot (index n): whoever meets it sits the round out.
  const int m = (n % 2 == 0) ? n : n + 1;
  // Slot 0 stays fixed; the others rotate.
  std::vector<int> ring(m);
  for (int i = 0; i < m; ++i) { ring[i] = i; }
  for (int r = 0; r < m - 1; ++r) {
    Round round;
    for (int k = 0; k < m / 2; ++k) {
      const int a = ring[k];
      const int b = ring[m - 1 - k];
      if (a < n && b < n) { round.push_back({std::min(a, b), std::max(a, b)}); }
    }
    std::sort(round.begin(), round.end(),
              [](const Pair& x, const Pair& y) { return x.src != y.src ? x.src < y.src : x.dst < y.dst; });
    rounds.push_back(std::move(round));
    // Rotate slots 1..m-1 by one.
    std::rotate(ring.begin() + 1, ring.end() - 1, ring.end());
  }
  return rounds;
}

namespace {
bool contains(const std::vector<Pair>& v, int a, int b) { return std::find(v.begin(), v.end(), Pair{a, b}) != v.end(); }
}  // namespace

std::vector<Round> unidirectional_steps(int n, Mode mode, const std::vector<Pair>& selected) {
  std::vector<Round> steps;
  if (mode == Mode::serial) {
    for (const auto& p : ordered_pairs(n)) {
      if (contains(selected, p.src, p.dst)) { steps.push_back({p}); }
    }
    return steps;
  }
  for (const auto& round : circle_rounds(n)) {
    Round forward;
    Round backward;
    for (const auto& p : round) {
      if (contains(selected, p.src, p.dst)) { forward.push_back(p); }
      if (contains(selected, p.dst, p.src)) { backward.push_back({p.dst, p.src}); }
    }
    if (!forward.empty()) { steps.push_back(std::move(forward)); }
    if (!backward.empty()) { steps.push_back(std::move(backward)); }
  }
  return steps;
}

std::vector<Round> bidirectional_steps(int n, Mode mode, const std::vector<Pair>& selected) {
  auto keep = [&](int a, int b) { return contains(selected, a, b); };
  if (mode == Mode::serial) {
    std::vector<Round> steps;
    for (const auto& p : unordered_pairs(n)) {
      if (keep(p.src, p.dst) || keep(p.dst, p.src)) { steps.push_back({p}); }
    }
    return steps;
  }
  return filter_rounds(circle_rounds(n), keep);
}

bool is_disjoint(const Round& round) {
  std::set<int> seen;
  for (const auto& p : round) {
    if (p.src == p.dst || !seen.insert(p.src).second || !seen.insert(p.dst).second) { return false; }
  }
  return true;
}

std::optional<std::vector<Pair>> parse_pairs(const std::string& text, int n, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::vector<Pair>> {
    if (error != nullptr) { *error = why; }
    return std::nullopt;
  };
  if (text.empty() || text == "all") { return ordered_pairs(n); }
  std::vector<Pair> out;
  std::string_view rest(text);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) { return fail("pair '" + std::string(item) + "' is not SRC:DST"); }
    int a = -1;
    int b = -1;
    const auto sa = item.substr(0, colon);
    const auto sb = item.substr(colon + 1);
    const auto ra = std::from_chars(sa.data(), sa.data() + sa.size(), a);
    const auto rb = std::from_chars(sb.data(), sb.data() + sb.size(), b);
    if (sa.empty() || sb.empty() || ra.ec != std::errc{} || rb.ec != std::errc{} || ra.ptr != sa.data() + sa.size() ||
        rb.ptr != sb.data() + sb.size()) {
      return fail("pair '" + std::string(item) + "' is not SRC:DST with GPU indices");
    }
    if (a < 0 || b < 0 || a >= n || b >= n) {
      return fail("pair '" + std::string(item) + "' names a GPU outside 0.." + std::to_string(n - 1));
    }
    if (a == b) { return fail("pair '" + std::string(item) + "' names the same GPU twice"); }
    if (!contains(out, a, b)) { out.push_back({a, b}); }
  }
  if (out.empty()) { return fail("no pairs given"); }
  return out;
}

const char* to_string(Mode m) { return m == Mode::serial ? "serial" : "rounds"; }

ModeChoice choose_mode(const std::vector<Pair>& selected, const std::function<std::optional<int>(int, int)>& nvlinks) {
  if (selected.empty()) { return {Mode::serial, "auto: no pair selected"}; }
  for (const auto& p : selected) {
    const auto n = nvlinks(std::min(p.src, p.dst), std::max(p.src, p.dst));
    if (!n) {
      return {Mode::serial, "auto: serial, how GPU " + std::to_string(p.src) + " and GPU " + std::to_string(p.dst) +
                                " are connected is unknown (no NVML)"};
    }
    if (*n <= 0) {
      return {Mode::serial, "auto: serial, GPU " + std::to_string(p.src) + " and GPU " + std::to_string(p.dst) +
                                " talk over PCIe (pairs of a round could share a switch or the root complex)"};
    }
  }
  return {Mode::rounds, "auto: rounds, every selected pair is joined by NVLink (disjoint pairs share no link)"};
}

}  // namespace p2pnode::agent
