// The breakage table read: nvidia/breakages.yaml (and a fleet's own file) parsed and checked entry by
// entry, each error naming the entry and field.
#include "nvidia/breakage.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>

#include "core/driver_version.hpp"
#include "core/embedded.hpp"
#include "core/text.hpp"

namespace p2pnode::nvidia {
namespace {

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
    b.no_builtin_why = std::string(trim(fix["none"].as<std::string>(), " \t\r"));
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
  b.cause = std::string(trim(*cause, " \t\r"));
  auto rem = need_string(n, where, "remediation");
  if (!rem) { return rem.error(); }
  b.remediation = std::string(trim(*rem, " \t\r"));
  if (const auto fix = n["fix"]) {
    if (auto st = parse_breakage_fix(fix, where, b); !st) { return st.error(); }
  }
  return b;
}

}  // namespace

std::string Evidence::describe() const {
  switch (kind) {
    case EvidenceKind::build: return "build here: " + ref;
    case EvidenceKind::tag: return "NVIDIA's tag: " + ref;
    case EvidenceKind::report: return ref + ": " + says;
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

}  // namespace p2pnode::nvidia
