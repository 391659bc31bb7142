#include "nvidia/breakage.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/driver_version.hpp"
#include "core/embedded.hpp"
#include "core/text.hpp"

namespace p2pnode::nvidia {
namespace {
int compare(const std::vector<int>& a, const std::vector<int>& b) {
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y) { return x < y ? -1 : 1; }
  }
  return 0;
}

// A regex for the decimal integers >= n (no leading zeros).
std::string at_least(int n) {
  const std::string s = std::to_string(n);
  const std::size_t d = s.size();
  std::vector<std::string> alts = {s};
  for (std::size_t i = 0; i < d; ++i) {
    if (s[i] == '9') { continue; }
    std::string a = s.substr(0, i) + "[" + std::string(1, char(s[i] + 1)) + "-9]";
    if (d - i - 1 > 0) { a += "[0-9]{" + std::to_string(d - i - 1) + "}"; }
    alts.push_back(a);
  }
  alts.push_back("[1-9][0-9]{" + std::to_string(d) + ",}");
  std::string out = "(";
  for (std::size_t i = 0; i < alts.size(); ++i) { out += (i ? "|" : "") + alts[i]; }
  return out + ")";
}
}  // namespace

const std::vector<Breakage>& builtin_breakages() {
  static const std::vector<Breakage> table = [] {
    const auto text = embedded_file("nvidia/breakages.yaml");
    if (!text) { return std::vector<Breakage>{}; }
    auto parsed = parse_breakages(*text, "nvidia/breakages.yaml (compiled in)");
    return parsed ? *parsed : std::vector<Breakage>{};
  }();
  return table;
}

const Breakage* find_breakage(const std::vector<Breakage>& table, std::string_view id) {
  for (const auto& b : table) {
    if (b.id == id) { return &b; }
  }
  return nullptr;
}

std::optional<std::string_view> builtin_patch(std::string_view name) {
  return embedded_file("nvidia/patches/" + std::string(name) + ".patch");
}

std::vector<std::string> builtin_patch_names() {
  std::vector<std::string> out;
  constexpr std::string_view prefix = "nvidia/patches/", suffix = ".patch";
  for (const auto n : embedded_names()) {
    if (n.substr(0, prefix.size()) == prefix && n.size() > prefix.size() + suffix.size()) {
      out.emplace_back(n.substr(prefix.size(), n.size() - prefix.size() - suffix.size()));
    }
  }
  return out;
}

std::string BreakageMatch::describe() const {
  return "known breakage " + breakage->id + " (make.log line " + std::to_string(line) + "): " + breakage->cause +
         " Fix: " + breakage->remediation;
}

std::vector<BreakageMatch> match_make_log(const std::vector<Breakage>& table, std::string_view log,
                                          std::string_view driver_version) {
  std::vector<BreakageMatch> out;
  for (const auto& b : table) {
    if (!b.signature) { continue; }
    if (!driver_version.empty() && !branch_affected(b, driver_version)) { continue; }
    const std::regex re(*b.signature);
    int line_no = 0;
    std::size_t pos = 0;
    while (pos <= log.size()) {
      const auto nl = log.find('\n', pos);
      const auto line = log.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      ++line_no;
      if (std::regex_search(line.begin(), line.end(), re)) {
        out.push_back({&b, line_no, std::string(trim(line, " \t\r"))});
        break;
      }
      if (nl == std::string_view::npos) { break; }
      pos = nl + 1;
    }
  }
  return out;
}

std::optional<std::vector<int>> kernel_version_numbers(std::string_view release) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < release.size() && out.size() < 3) {
    if (release[i] < '0' || release[i] > '9') { break; }
    int v = 0;
    while (i < release.size() && release[i] >= '0' && release[i] <= '9') { v = v * 10 + (release[i++] - '0'); }
    out.push_back(v);
    if (i < release.size() && release[i] == '.') {
      ++i;
    } else {
      break;
    }
  }
  if (out.empty()) { return std::nullopt; }
  return out;
}

bool branch_affected(const Breakage& b, std::string_view v) {
  if (b.branches.empty()) { return true; }
  for (const auto& p : b.branches) {
    if (v.substr(0, p.size()) == p && (v.size() == p.size() || v[p.size()] == '.' || p.back() == '.')) { return true; }
  }
  // A branch newer than every one listed was not read when the list was made: it may carry the same
  // code (release_knowledge then says what is known of it), never silently cleared.
  const int have = driver_branch_of(v);
  if (have == 0) { return false; }
  for (const auto& p : b.branches) {
    if (const int listed = std::atoi(p.c_str()); listed == 0 || listed >= have) { return false; }
  }
  return true;
}

bool kernel_in_range(const Breakage& b, std::string_view release) {
  const auto k = kernel_version_numbers(release);
  if (!k) { return false; }
  if (b.kernel_min && compare(*k, *kernel_version_numbers(*b.kernel_min)) < 0) { return false; }
  if (b.kernel_max && compare(*k, *kernel_version_numbers(*b.kernel_max)) > 0) { return false; }
  return true;
}

bool headers_affected(const Breakage& b, std::string_view header_text) {
  if (!b.headers) { return true; }
  const bool hit = std::regex_search(header_text.begin(), header_text.end(), std::regex(b.headers->pattern));
  return b.headers->kind == HeaderTestKind::lacks ? !hit : hit;
}

std::optional<bool> headers_affected(const Breakage& b, const std::vector<std::optional<std::string>>& copies,
                                     bool headers_whole) {
  if (!b.headers) { return true; }
  const bool any = std::any_of(copies.begin(), copies.end(), [](const auto& c) { return c.has_value(); });
  if (b.headers->kind == HeaderTestKind::absent) {
    if (any) { return false; }
    if (!headers_whole) { return std::nullopt; }
    return true;
  }
  if (!any) { return std::nullopt; }
  const std::regex re(b.headers->pattern);
  const bool hit = std::any_of(copies.begin(), copies.end(),
                               [&](const auto& c) { return c && std::regex_search(c->begin(), c->end(), re); });
  return b.headers->kind == HeaderTestKind::lacks ? !hit : hit;
}

bool fixed_by_release(const Breakage& b, std::string_view v) {
  const int have = driver_branch_of(v);
  if (have == 0 || b.fixed_in.empty()) { return false; }
  int newest = 0;
  for (const auto& f : b.fixed_in) {
    const int fix = driver_branch_of(f);
    newest = std::max(newest, fix);
    if (fix == have && compare_driver_versions(v, f) >= 0) { return true; }
  }
  return have > newest;
}

std::string newest_affected(const Breakage& b) {
  std::string newest;
  for (const auto& c : b.affected) {
    if (newest.empty() || compare_driver_versions(c.release, newest) > 0) { newest = c.release; }
  }
  return newest;
}

Knowledge release_knowledge(const Breakage& b, std::string_view v) {
  if (!branch_affected(b, v)) { return Knowledge::not_affected; }
  if (fixed_by_release(b, v)) { return Knowledge::fixed; }
  const std::string newest = newest_affected(b);
  if (newest.empty() || !is_driver_version(v)) { return Knowledge::affected; }
  return compare_driver_versions(v, newest) <= 0 ? Knowledge::affected : Knowledge::beyond;
}

bool release_affected(const Breakage& b, std::string_view v) { return release_knowledge(b, v) == Knowledge::affected; }

std::vector<std::string> missing_evidence(const Breakage& b) {
  std::vector<std::string> out;
  auto claim = [&](const char* list, std::size_t i, const ReleaseClaim& c) {
    const std::string at = std::string(list) + "[" + std::to_string(i) + "] (" + c.release + ")";
    if (c.evidence.ref.empty()) { out.push_back(at + ": no source (build, tag or report)"); }
  };
  if (!b.introduced) {
    out.push_back("introduced: missing (the kernel change, its release or commit, and the source)");
  } else if (b.introduced->kernel.empty() && b.introduced->commit.empty()) {
    out.push_back("introduced: neither a kernel release nor a commit");
  }
  if (b.affected.empty()) { out.push_back("affected: no release listed as affected"); }
  for (std::size_t i = 0; i < b.affected.size(); ++i) { claim("affected", i, b.affected[i]); }
  for (std::size_t i = 0; i < b.fixed.size(); ++i) { claim("fixed_in", i, b.fixed[i]); }
  if (!b.headers && !b.kernel_min && !b.kernel_max) { out.push_back("kernels: no header test and no release range"); }
  return out;
}

std::optional<std::string> first_release_past(const std::vector<const Breakage*>& stops) {
  std::vector<std::string> candidates;
  for (const auto* b : stops) { candidates.insert(candidates.end(), b->fixed_in.begin(), b->fixed_in.end()); }
  std::sort(candidates.begin(), candidates.end(),
            [](const std::string& a, const std::string& b) { return compare_driver_versions(a, b) < 0; });
  for (const auto& c : candidates) {
    if (std::all_of(stops.begin(), stops.end(), [&](const Breakage* b) {
          const Knowledge k = release_knowledge(*b, c);
          return k == Knowledge::not_affected || k == Knowledge::fixed;  // beyond is not known to build
        })) {
      return c;
    }
  }
  return std::nullopt;
}

bool source_affected(const Breakage& b, std::optional<std::string_view> text) {
  if (!b.source) { return true; }
  if (!text) { return false; }
  if (!std::regex_search(text->begin(), text->end(), std::regex(b.source->uses))) { return false; }
  return b.source->fixed.empty() || !std::regex_search(text->begin(), text->end(), std::regex(b.source->fixed));
}

std::string PredictedBreakage::describe(std::string_view driver_version, std::string_view kernel_release) const {
  const std::string what = breakage->stage == BreakageStage::build     ? " will stop the build of "
                           : breakage->stage == BreakageStage::display ? " affects the console of "
                                                                       : " will break ";
  return "known breakage " + breakage->id + what + std::string(driver_version) + " on " + std::string(kernel_release) +
         ": " + breakage->cause;
}

namespace {
// One pass over the table for predict_breakages and beyond_evidence: each entry the kernel has (range
// and header test), with what the version and the tree's source say of it.
template <typename Visit>
void for_each_on_kernel(const std::vector<Breakage>& table, std::string_view driver_version,
                        std::string_view kernel_release, const std::map<std::string, bool>& header_tests,
                        const std::map<std::string, bool>* source_tests, Visit visit) {
  for (const auto& b : table) {
    const Knowledge k = release_knowledge(b, driver_version);
    if (k == Knowledge::not_affected || k == Knowledge::fixed || !kernel_in_range(b, kernel_release)) { continue; }
    std::optional<bool> source;
    if (b.source && source_tests) {
      if (const auto it = source_tests->find(b.id); it != source_tests->end()) { source = it->second; }
    }
    if (source == false) { continue; }
    if (b.headers) {
      const auto it = header_tests.find(b.id);
      if (it == header_tests.end() || !it->second) { continue; }
    }
    visit(b, k, source.has_value());
  }
}
bool names_builtin(const Breakage& b, const std::vector<std::string>& builtins) {
  return b.fix_builtin && std::find(builtins.begin(), builtins.end(), *b.fix_builtin) != builtins.end();
}
}  // namespace

std::vector<PredictedBreakage> predict_breakages(const std::vector<Breakage>& table, std::string_view driver_version,
                                                 std::string_view kernel_release,
                                                 const std::map<std::string, bool>& header_tests,
                                                 const std::vector<std::string>& profile_builtins,
                                                 const std::map<std::string, bool>* source_tests) {
  std::vector<PredictedBreakage> out;
  for_each_on_kernel(table, driver_version, kernel_release, header_tests, source_tests,
                     [&](const Breakage& b, Knowledge k, bool source_read) {
                       if (k == Knowledge::beyond && !source_read) {
                         return;  // nothing known: beyond_evidence
                       }
                       out.push_back({&b, names_builtin(b, profile_builtins)});
                     });
  return out;
}

std::vector<const Breakage*> beyond_evidence(const std::vector<Breakage>& table, std::string_view driver_version,
                                             std::string_view kernel_release,
                                             const std::map<std::string, bool>& header_tests,
                                             const std::vector<std::string>& profile_builtins,
                                             const std::map<std::string, bool>* source_tests) {
  std::vector<const Breakage*> out;
  for_each_on_kernel(table, driver_version, kernel_release, header_tests, source_tests,
                     [&](const Breakage& b, Knowledge k, bool source_read) {
                       if (k == Knowledge::beyond && !source_read && !names_builtin(b, profile_builtins)) {
                         out.push_back(&b);
                       }
                     });
  return out;
}

std::string dkms_patch_match(const Breakage& b) {
  if (!b.kernel_min || b.kernel_max) { return {}; }
  const auto v = *kernel_version_numbers(*b.kernel_min);
  const int major = v[0], minor = v[1];
  return "^(" + std::to_string(major) + "\\." + at_least(minor) + "|" + at_least(major + 1) + "\\.[0-9]+)([.-]|$)";
}

}  // namespace p2pnode::nvidia
