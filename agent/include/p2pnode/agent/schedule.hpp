// Pair scheduling for the peer tests (host-only).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace p2pnode::agent {

// An ordered pair: data flows from src to dst.
struct Pair {
  int src = 0;
  int dst = 0;
  friend bool operator==(const Pair&, const Pair&) = default;
};

// One round: pairs that share no GPU and run at the same time.
using Round = std::vector<Pair>;

enum class Mode { serial, rounds };

// Every ordered pair (i, j), i != j, of n GPUs in the order (0,1), (0,2), ..., (1,0), ...
std::vector<Pair> ordered_pairs(int n);

// Every unordered pair {i < j} of n GPUs.
std::vector<Pair> unordered_pairs(int n);

// Disjoint unordered pairs by the circle (round-robin) method: n - 1 rounds for even n,
// n rounds for odd n (one GPU sits out each round). Each unordered pair appears in exactly
// one round, with src < dst. Empty for n < 2.
std::vector<Round> circle_rounds(int n);

// Rounds restricted to the pairs that `keep` accepts (unordered: {a, b} is kept when
// keep(a, b) or keep(b, a)); rounds left empty are dropped.
template <typename Keep>
std::vector<Round> filter_rounds(const std::vector<Round>& rounds, Keep keep) {
  std::vector<Round> out;
  for (const auto& r : rounds) {
    Round kept;
    for (const auto& p : r) {
      if (keep(p.src, p.dst) || keep(p.dst, p.src)) { kept.push_back(p); }
    }
    if (!kept.empty()) { out.push_back(std::move(kept)); }
  }
  return out;
}

// Split ordered pairs into steps of pairs that run at the same time.
// serial: one ordered pair per step, in ordered_pairs order.
// rounds: for every circle round, one step with every pair a->b of the round, then one step
// with every b->a; so 2(n-1) steps for even n. Only pairs in `selected` appear.
std::vector<Round> unidirectional_steps(int n, Mode mode, const std::vector<Pair>& selected);

// Steps for bidirectional tests: each unordered pair once (src < dst), serial one per step,
// rounds one circle round per step. A pair is included if either direction is selected.
std::vector<Round> bidirectional_steps(int n, Mode mode, const std::vector<Pair>& selected);

// True when no GPU appears twice in the round.
bool is_disjoint(const Round& round);

// Parse "0:1,1:0" (ordered pairs) or "all"; nullopt and an error text when malformed or
// out of range for n GPUs.
std::optional<std::vector<Pair>> parse_pairs(const std::string& text, int n, std::string* error);

const char* to_string(Mode m);

// --mode auto: rounds when the GPUs of every selected pair are joined by NVLink (straight or
// through NVSwitch: disjoint pairs then share no link, so running them together changes no pair's
// figure), serial otherwise (PCIe pairs of a round may share a switch or the root complex).
// nvlinks(a, b): NVLinks between GPUs a and b (0 for PCIe), or nullopt when unknown (no NVML).
struct ModeChoice {
  Mode mode = Mode::serial;
  std::string reason;
};
ModeChoice choose_mode(const std::vector<Pair>& selected, const std::function<std::optional<int>(int, int)>& nvlinks);

}  // namespace p2pnode::agent
