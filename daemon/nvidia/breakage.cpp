#include "nvidia/breakage.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>

#include "core/driver_version.hpp"
#include "core/embedded.hpp"

namespace p2pnode::nvidia {
namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) { return {}; }
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

Result<std::string> need_string(const YAML::Node& n, const std::string& where, const char* field) {
  const auto v = n[field];
  if (!v || !v.IsScalar() || v.as<std::string>().empty()) {
    return Error{where + ": field '" + field + "' is missing or not a non-empty string"};
  }
  return v.as<std::string>();
}

Status check_regex(const std::string& re, const std::string& where) {
  try {
    std::regex r(re);
  } catch (const std::regex_error& e) {
    return Error{where + ": '" + re + "' is not a valid ECMAScript regex: " + e.what()};
  }
  return {};
}

Status check_version(const std::string& v, const std::string& where) {
  const auto n = kernel_version_numbers(v);
  if (!n || n->size() < 2) { return Error{where + ": '" + v + "' is not a kernel version like 6.10"}; }
  return {};
}

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

// {build: …} | {tag: …} | {report: owner/repo#N, says: …}, beside other keys of the same mapping.
Result<Evidence> parse_evidence(const YAML::Node& n, const std::string& where) {
  const int kinds = (n["build"] ? 1 : 0) + (n["tag"] ? 1 : 0) + (n["report"] ? 1 : 0);
  if (kinds != 1) { return Error{where + ": expected exactly one source: build, tag or report"}; }
  Evidence e;
  const char* field = n["build"] ? "build" : n["tag"] ? "tag" : "report";
  e.kind = n["build"] ? EvidenceKind::build : n["tag"] ? EvidenceKind::tag : EvidenceKind::report;
  auto ref = need_string(n, where, field);
  if (!ref) { return ref.error(); }
  e.ref = *ref;
  if (n["says"]) {
    auto says = need_string(n, where, "says");
    if (!says) { return says.error(); }
    e.says = *says;
  }
  if (e.kind == EvidenceKind::report && e.says.empty()) { return Error{where + ": a report needs says: what it says"}; }
  if (e.kind != EvidenceKind::report && !e.says.empty()) { return Error{where + ": says: belongs to a report"}; }
  return e;
}

Status check_keys(const YAML::Node& n, const std::string& where, const std::vector<std::string>& known) {
  for (const auto& kv : n) {
    const auto key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (const auto& k : known) { list += (list.empty() ? "" : ", ") + k; }
      return Error{where + ": unknown field '" + key + "' (expected " + list + ")"};
    }
  }
  return {};
}

// affected / fixed_in: a list of {release, and its evidence}; a bare release string is accepted
// (missing_evidence() names it).
Result<std::vector<ReleaseClaim>> parse_claims(const YAML::Node& list, const std::string& where) {
  if (!list.IsSequence()) { return Error{where + ": expected a list of {release, build|tag|report}"}; }
  std::vector<ReleaseClaim> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& c = list[i];
    const std::string w = where + "[" + std::to_string(i) + "]";
    ReleaseClaim claim;
    if (c.IsScalar()) {
      claim.release = c.as<std::string>();
    } else if (c.IsMap()) {
      if (auto st = check_keys(c, w, {"release", "build", "tag", "report", "says"}); !st) { return st.error(); }
      auto rel = need_string(c, w, "release");
      if (!rel) { return rel.error(); }
      claim.release = *rel;
      auto ev = parse_evidence(c, w + " (" + claim.release + ")");
      if (!ev) { return ev.error(); }
      claim.evidence = *ev;
    } else {
      return Error{w + ": expected {release, build|tag|report}"};
    }
    if (!is_driver_version(claim.release)) {
      return Error{w + ": '" + claim.release + "' is not a release like 570.153.02"};
    }
    out.push_back(std::move(claim));
  }
  return out;
}

Result<Introduced> parse_introduced(const YAML::Node& n, const std::string& where) {
  if (!n.IsMap()) { return Error{where + ": expected {kernel, commit, build|tag|report}"}; }
  if (auto st = check_keys(n, where, {"kernel", "commit", "build", "tag", "report", "says"}); !st) {
    return st.error();
  }
  Introduced in;
  if (n["kernel"]) {
    in.kernel = n["kernel"].as<std::string>();
    if (auto st = check_version(in.kernel, where + ".kernel"); !st) { return st.error(); }
  }
  if (n["commit"]) { in.commit = n["commit"].as<std::string>(); }
  auto ev = parse_evidence(n, where);
  if (!ev) { return ev.error(); }
  in.evidence = *ev;
  return in;
}

// kernels.headers: {file, pattern}, {file, lacks} or {file, absent: true}.
Result<HeaderTest> parse_header_test(const YAML::Node& h, const std::string& hw) {
  if (!h.IsMap()) { return Error{hw + " must be {file, pattern}, {file, lacks} or {file, absent: true}"}; }
  auto file = need_string(h, hw, "file");
  if (!file) { return file.error(); }
  const int kinds = (h["pattern"] ? 1 : 0) + (h["lacks"] ? 1 : 0) + (h["absent"] ? 1 : 0);
  if (kinds != 1) { return Error{hw + ": expected exactly one of pattern, lacks, absent"}; }
  HeaderTest t{*file, "", HeaderTestKind::matches};
  if (h["absent"]) {
    if (!h["absent"].IsScalar() || h["absent"].as<std::string>() != "true") {
      return Error{hw + ": absent must be true"};
    }
    t.kind = HeaderTestKind::absent;
  } else {
    const char* field = h["pattern"] ? "pattern" : "lacks";
    auto pat = need_string(h, hw, field);
    if (!pat) { return pat.error(); }
    if (auto st = check_regex(*pat, hw + "." + field); !st) { return st.error(); }
    t.pattern = *pat;
    if (!h["pattern"]) { t.kind = HeaderTestKind::lacks; }
  }
  return t;
}

// kernels: {min, max, headers}, the kernels an entry is about.
Status parse_breakage_kernels(const YAML::Node& n, const std::string& where, Breakage& b) {
  const auto k = n["kernels"];
  if (!k || !k.IsMap()) { return Error{where + ": 'kernels' must be a mapping with min, max and/or headers"}; }
  for (const auto& kv : k) {
    const auto key = kv.first.as<std::string>();
    if (key != "min" && key != "max" && key != "headers") {
      return Error{where + ": kernels: unknown field '" + key + "' (expected min, max, headers)"};
    }
  }
  if (k["min"]) {
    b.kernel_min = k["min"].as<std::string>();
    if (auto st = check_version(*b.kernel_min, where + ": kernels.min"); !st) { return st.error(); }
  }
  if (k["max"]) {
    b.kernel_max = k["max"].as<std::string>();
    if (auto st = check_version(*b.kernel_max, where + ": kernels.max"); !st) { return st.error(); }
  }
  if (const auto h = k["headers"]) {
    auto t = parse_header_test(h, where + ": kernels.headers");
    if (!t) { return t.error(); }
    b.headers = *t;
  }
  return {};
}

// source: {file, uses, fixed}, what the driver's own source says about the entry.
Result<SourceTest> parse_source_test(const YAML::Node& src, const std::string& where) {
  if (!src.IsMap()) { return Error{where + ": source must be {file, uses, fixed}"}; }
  for (const auto& kv : src) {
    const auto key = kv.first.as<std::string>();
    if (key != "file" && key != "uses" && key != "fixed") {
      return Error{where + ": source: unknown field '" + key + "' (expected file, uses, fixed)"};
    }
  }
  auto file = need_string(src, where + ": source", "file");
  if (!file) { return file.error(); }
  auto uses = need_string(src, where + ": source", "uses");
  if (!uses) { return uses.error(); }
  if (auto st = check_regex(*uses, where + ": source.uses"); !st) { return st.error(); }
  SourceTest t{*file, *uses, ""};
  if (src["fixed"]) {
    auto fixed = need_string(src, where + ": source", "fixed");
    if (!fixed) { return fixed.error(); }
    if (auto st = check_regex(*fixed, where + ": source.fixed"); !st) { return st.error(); }
    t.fixed = *fixed;
  }
  return t;
}

// fix: {builtin: <patch name>} or {none: <why there is no builtin patch>}.
Status parse_breakage_fix(const YAML::Node& fix, const std::string& where, Breakage& b) {
  if (fix.IsMap() && fix.size() == 1 && fix["none"] && fix["none"].IsScalar() &&
      !fix["none"].as<std::string>().empty()) {
    b.no_builtin_why = trim(fix["none"].as<std::string>());
  } else if (!fix.IsMap() || fix.size() != 1 || !fix["builtin"] || !fix["builtin"].IsScalar()) {
    return Error{where + ": 'fix' must be {builtin: <patch name>} or {none: <why there is no builtin patch>}"};
  } else {
    b.fix_builtin = fix["builtin"].as<std::string>();
  }
  return {};
}

// One entry of the table; `where` names it by index, and by id once that is read. `earlier`: the
// entries before it, whose ids it must not repeat.
Result<Breakage> parse_breakage_entry(const YAML::Node& n, std::string where, const std::vector<Breakage>& earlier) {
  if (!n.IsMap()) { return Error{where + ": expected a mapping with id, signature, branches, kernels, cause, fix"}; }
  Breakage b;
  auto id = need_string(n, where, "id");
  if (!id) { return id.error(); }
  b.id = *id;
  where += " (" + b.id + ")";
  for (const auto& kv : n) {
    const auto key = kv.first.as<std::string>();
    static const std::vector<std::string> known = {"id",       "signature", "stage",      "branches",
                                                   "kernels",  "source",    "introduced", "affected",
                                                   "fixed_in", "cause",     "fix",        "remediation"};
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Error{where + ": unknown field '" + key +
                   "' (expected id, signature, stage, branches, kernels, source, introduced, affected, fixed_in, "
                   "cause, fix, remediation)"};
    }
  }
  if (std::any_of(earlier.begin(), earlier.end(), [&](const Breakage& o) { return o.id == b.id; })) {
    return Error{where + ": duplicate id"};
  }
  if (const auto sig = n["signature"]) {
    if (!sig.IsScalar()) { return Error{where + ": 'signature' must be a regex string"}; }
    b.signature = sig.as<std::string>();
    if (auto st = check_regex(*b.signature, where + ": signature"); !st) { return st.error(); }
  }
  if (const auto st = n["stage"]) {
    const auto v = st.IsScalar() ? st.as<std::string>() : std::string();
    if (v != "build" && v != "runtime" && v != "display") {
      return Error{where + ": 'stage' must be build, runtime or display, found '" + v + "'"};
    }
    b.stage = v == "build" ? BreakageStage::build : v == "runtime" ? BreakageStage::runtime : BreakageStage::display;
  }
  if (const auto br = n["branches"]) {
    if (!br.IsSequence()) { return Error{where + ": 'branches' must be a list of driver version prefixes"}; }
    for (const auto& x : br) { b.branches.push_back(x.as<std::string>()); }
  }
  if (auto st = parse_breakage_kernels(n, where, b); !st) { return st.error(); }
  if (const auto in = n["introduced"]) {
    auto parsed = parse_introduced(in, where + ": introduced");
    if (!parsed) { return parsed.error(); }
    b.introduced = *parsed;
  }
  if (const auto af = n["affected"]) {
    auto parsed = parse_claims(af, where + ": affected");
    if (!parsed) { return parsed.error(); }
    b.affected = std::move(*parsed);
  }
  if (const auto fi = n["fixed_in"]) {
    auto parsed = parse_claims(fi, where + ": fixed_in");
    if (!parsed) { return parsed.error(); }
    b.fixed = std::move(*parsed);
    for (const auto& c : b.fixed) { b.fixed_in.push_back(c.release); }
  }
  if (!b.kernel_min && !b.kernel_max && !b.headers) {
    return Error{where + ": 'kernels' must say which kernels are affected (min, max or headers)"};
  }
  if (const auto src = n["source"]) {
    auto t = parse_source_test(src, where);
    if (!t) { return t.error(); }
    b.source = *t;
  }
  auto cause = need_string(n, where, "cause");
  if (!cause) { return cause.error(); }
  b.cause = trim(*cause);
  auto rem = need_string(n, where, "remediation");
  if (!rem) { return rem.error(); }
  b.remediation = trim(*rem);
  if (const auto fix = n["fix"]) {
    if (auto st = parse_breakage_fix(fix, where, b); !st) { return st.error(); }
  }
  return b;
}

}  // namespace

std::string Evidence::describe() const {
  switch (kind) {
    case EvidenceKind::build:
      return "build here: " + ref;
    case EvidenceKind::tag:
      return "NVIDIA's tag: " + ref;
    case EvidenceKind::report:
      return ref + ": " + says;
  }
  return ref;
}

Result<std::vector<Breakage>> parse_breakages(std::string_view text, std::string_view origin) {
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) { return Error{std::string(origin) + ": not valid YAML: " + e.what()}; }
  const auto list = doc["breakages"];
  if (!list || !list.IsSequence()) { return Error{std::string(origin) + ": expected a top-level 'breakages:' list"}; }
  std::vector<Breakage> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto b = parse_breakage_entry(list[i], std::string(origin) + ": breakages[" + std::to_string(i) + "]", out);
    if (!b) { return b.error(); }
    out.push_back(std::move(b.value()));
  }
  return out;
}

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
        out.push_back({&b, line_no, trim(line)});
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
