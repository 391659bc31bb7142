#include "lifecycle/patch_check.hpp"

#include <filesystem>

#include "nvidia/patch_report.hpp"

namespace p2pnode::lifecycle {
namespace fs = std::filesystem;
namespace {

// A name from a patch that stays inside the tree: relative, no "..", no empty component.
bool inside(const std::string& rel) {
  if (rel.empty() || rel.front() == '/') { return false; }
  for (std::size_t pos = 0; pos <= rel.size();) {
    const auto slash = rel.find('/', pos);
    const auto part = rel.substr(pos, (slash == std::string::npos ? rel.size() : slash) - pos);
    if (part.empty() || part == "." || part == "..") { return false; }
    if (slash == std::string::npos) { break; }
    pos = slash + 1;
  }
  return true;
}

}  // namespace

Status check_patches_apply(const sys::SysRoot& root, Runner& run, const Staged& s, const std::vector<Artifact>& listed,
                           const std::string& tree) {
  if (s.patches.empty()) { return {}; }
  const std::string scratch = std::string(kStateDir) + "/patch-check/" + s.dir.substr(s.dir.rfind('/') + 1);
  (void)root.remove_tree(scratch);
  if (auto st = root.make_dirs(scratch); !st) { return st.error(); }
  struct Drop {
    const sys::SysRoot& root;
    std::string dir;
    ~Drop() {
      (void)root.remove_tree(dir);
      (void)root.remove_empty_dir(dir.substr(0, dir.rfind('/')));  // patch-check/ once empty
    }
  } drop{root, scratch};

  // The files every patch reads, copied from the staged tree (regular files only; a link is left
  // out, so patch says the tree lacks it, as DKMS's copy would not follow it either).
  for (const auto& p : s.patches) {
    const auto text = root.read_text(p, 64 << 20);
    if (!text) { return text.error().with_context("reading " + p); }
    for (const auto& rel : nvidia::patch_inputs(*text)) {
      if (!inside(rel)) {
        return Error{"patch " + p.substr(p.rfind('/') + 1) + " names " + rel + ", outside the tree"};
      }
      const std::string from = sys::join(s.dir, rel), to = sys::join(scratch, rel);
      const auto info = root.lstat(from);
      if (!info || info->type != sys::FileType::regular || root.exists(to)) { continue; }
      Status st = root.make_dirs(to.substr(0, to.rfind('/')));
      if (st) { st = root.copy_file(from, to); }
      if (!st) { return st.error(); }
    }
  }
  int fuzzed = 0;
  for (std::size_t i = 0; i < s.patches.size(); ++i) {
    const std::string& p = s.patches[i];
    const std::string name = p.substr(p.rfind('/') + 1);
    const bool strict = i >= listed.size() || !listed[i].builtin;
    const std::string rej = scratch + "/.rejects";
    if (root.exists(rej)) { (void)root.remove_file(rej); }
    std::vector<std::string> argv{
        "patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-r", root.host_path(rej).string()};
    if (strict) { argv.push_back("--fuzz=0"); }
    for (const auto& a :
         {std::string("-d"), root.host_path(scratch).string(), std::string("-i"), root.host_path(p).string()}) {
      argv.push_back(a);
    }
    const auto r = run.quiet(std::move(argv), std::chrono::minutes(5));
    const auto outcome = nvidia::read_patch_output(r.out + "\n" + r.err);
    if (r.success() && outcome.clean()) {
      fuzzed += outcome.fuzzed;
      continue;
    }
    std::vector<std::string> rejects;
    if (auto text = root.read_text(scratch + "/.rejects", 1 << 20)) { rejects = nvidia::reject_hunks(*text); }
    if (outcome.clean()) {
      return Error{"patch " + name + " does not apply to " + tree + ": patch " + r.describe() + ": " +
                   dkms::tail_lines(r.out + r.err, 5)};
    }
    std::string why = nvidia::describe_patch_failure(name, tree, outcome, rejects);
    if (strict && !outcome.failed.empty()) {
      why.insert(
          why.find('\n') == std::string::npos ? why.size() : why.find('\n'),
          " (a profile's patch must apply with no fuzz: a hunk whose context moved may land in the wrong function)");
    }
    return Error{why};
  }
  run.log()("patches: " + std::to_string(s.patches.size()) + " apply to " + tree +
            " in order (patch -p1, as DKMS applies them)" +
            (fuzzed ? ", " + std::to_string(fuzzed) + " hunk(s) with fuzz" : ""));
  return {};
}

}  // namespace p2pnode::lifecycle
