#include "lifecycle/module_stage.hpp"

#include <cstdio>
#include <filesystem>

#include "lifecycle/dkms_run.hpp"
#include "lifecycle/tree_rules.hpp"

namespace p2pnode::lifecycle {
namespace fs = std::filesystem;
namespace {

std::string patch_name(std::size_t i, const Artifact& a) {
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "%02zu-", i + 1);
  return prefix + (a.builtin ? *a.builtin + ".patch" : artifact_basename(a));
}

// The verified archive unpacked into `dir`: its listing read first, so that no device node or FIFO
// is ever created (tar as root would make them), then without owners or set-id bits, and a single
// top folder (open-gpu-kernel-modules-550.90.07-p2p/) taken as the tree. Only a real folder is: a
// lone link to a folder would have made the staging folder the link.
Status unpack_source(const sys::SysRoot& root, sys::CommandRunner& runner, const std::string& archive,
                     const std::string& dir) {
  sys::Command list;
  list.argv = list_argv(root.host_path(archive).string());
  list.timeout = std::chrono::minutes(10);
  const auto l = runner.run(list);
  if (!l.success()) { return Error{"listing " + archive + ": tar " + l.describe() + ": " + l.err, l.exit_code}; }
  if (const auto special = special_archive_member(l.out)) {
    return Error{"the archive's member " + *special +
                 ": a source tree holds only files, directories and symbolic links "
                 "(nothing was unpacked)"};
  }
  sys::Command tar;
  tar.argv = unpack_argv(root.host_path(archive).string(), root.host_path(dir).string());
  tar.timeout = std::chrono::minutes(10);
  const auto r = runner.run(tar);
  if (!r.success()) { return Error{"unpacking " + archive + ": tar " + r.describe() + ": " + r.err, r.exit_code}; }
  if (auto st = root.strip_setid(dir); !st) { return st.error().with_context("unpacking " + archive); }
  const auto top = root.list_dir(dir);
  const auto inner_info = top.size() == 1 ? root.lstat(sys::join(dir, top[0])) : Result<sys::FileInfo>(sys::FileInfo{});
  if (inner_info && inner_info->type == sys::FileType::directory) {
    const std::string tmp = dir + ".unpack";
    (void)root.remove_tree(tmp);
    Status st = root.move(sys::join(dir, top[0]), tmp);
    if (st) { st = root.remove_tree(dir); }
    if (st) { st = root.move(tmp, dir); }
    if (!st) { return st.error().with_context("flattening " + dir); }
  }
  return {};
}

// The staged tree held to the tree rules (lifecycle/tree_rules.hpp), whatever it came from, before
// p2pnode writes dkms.conf and patches/ into it: the staging folder and patches/ real folders.
Status check_staged_tree(const sys::SysRoot& root, const std::string& dir, bool writes_patches) {
  if (auto members = walk_tree(root, dir); !members) {
    return Error{"the staged tree " + dir + ": " + members.error().message + ": refusing it"};
  }
  if (!writes_patches) { return {}; }
  const std::string patches = sys::join(dir, "patches");
  const auto info = root.lstat(patches);
  if (!info) { return info.error(); }
  if (info->type == sys::FileType::missing || info->type == sys::FileType::directory) { return {}; }
  const auto target =
      info->type == sys::FileType::symlink ? root.read_link(patches) : Result<std::string>(std::string());
  return Error{"the staged tree " + dir + ": ./patches is " + std::string(sys::describe(info->type)) +
               (target && !target->empty() ? " (to " + *target + ")" : "") +
               ", not a folder: p2pnode writes the profile's patches there, and only into a folder of the tree itself"};
}

// The profile's patches in the tree's patches/ as 01-<name>.patch, 02-…, in the profile's order
// (their paths in s.patches); returns those names. On failure the caller empties the staging folder.
Result<std::vector<std::string>> stage_patch_files(const sys::SysRoot& root, const DriverSpec& d,
                                                   const std::vector<PatchFile>& patches, Staged& s) {
  std::vector<std::string> patch_names;
  if (auto st = root.make_dirs(sys::join(s.dir, "patches")); !st) { return st.error(); }
  for (std::size_t i = 0; i < patches.size(); ++i) {
    patch_names.push_back(patch_name(i, d.kernel_module->patches[i]));
    const std::string to = sys::join(s.dir, "patches", patch_names.back());
    s.patches.push_back(to);
    // The tree's own file of that name (a link among them) is replaced, never written through; a
    // refused tree leaves nothing behind in the staging folder.
    if (root.exists(to)) {
      if (auto st = root.remove_file(to); !st) { return st.error(); }
    }
    if (patches[i].from.empty()) {
      if (auto st = root.write_file_atomic(to, patches[i].text); !st) { return st.error(); }
      continue;
    }
    if (auto st = root.copy_file(patches[i].from, to); !st) { return st.error().with_context("copying a patch"); }
  }
  return patch_names;
}

// An NVIDIA open tree of the profile's driver version: its modules, and whether the core can be
// built once for every kernel (not when a patch changes it, or the tree lacks a core folder).
Result<dkms::Conf> stage_conf_nvidia_open(const sys::SysRoot& root, const DriverSpec& d, const ModuleTarget& t,
                                          const std::vector<PatchFile>& patches,
                                          const std::vector<std::string>& patch_names, Staged& s) {
  auto vmk = root.read_text(sys::join(s.dir, "version.mk"));
  const auto tree_version = vmk ? dkms::nvidia_tree_version(*vmk) : std::nullopt;
  if (!tree_version) {
    return Error{
        "the source tree has kernel-open/ and src/ but no NVIDIA_VERSION in version.mk: is it an "
        "open-gpu-kernel-modules checkout?"};
  }
  if (*tree_version != d.version) {
    return Error{"the source tree is version " + *tree_version + " (version.mk) but the profile's driver.version is " +
                 d.version + ": the module and the userspace must be the same version"};
  }
  s.modules = dkms::nvidia_modules(root.list_dir(sys::join(s.dir, "kernel-open")));
  std::vector<std::string> texts(patches.size());
  std::vector<nvidia::CorePatch> core_patches;
  for (std::size_t i = 0; i < patches.size(); ++i) {
    texts[i] = patches[i].from.empty() ? patches[i].text : root.read_text(s.patches[i], 64 << 20).value_or("");
    core_patches.push_back({patch_names[i], texts[i], patches[i].match});
  }
  s.core = nvidia::decide_core(core_patches);
  for (const auto& o : nvidia::kCoreObjects) {
    if (s.core.reuse && !root.is_dir(sys::join(s.dir, std::string(o.dir)))) {
      s.core = {};
      s.core.why_not = "the tree has no " + std::string(o.dir) + "/";
    }
  }
  return dkms::nvidia_open_conf(t.name, t.version, s.modules, patch_names, s.core.reuse);
}

// gdrcopy's release tarball, of the profile's release, built against the NVIDIA tree `against`.
Result<dkms::Conf> stage_conf_gdrdrv(const sys::SysRoot& root, const DriverSpec& d, const ModuleTarget& t,
                                     const std::string& against, Staged& s) {
  if (!root.exists(sys::join(s.dir, "src/gdrdrv/gdrdrv.c")) || !root.is_dir(sys::join(s.dir, "scripts"))) {
    return Error{
        "the gdrcopy source has no src/gdrdrv/gdrdrv.c or no scripts/ (its conftests): is it gdrcopy's "
        "release tarball (github.com/NVIDIA/gdrcopy, v" +
        d.version + ")?"};
  }
  // gdrdrv's version is the release's major.minor (2.6 for 2.6 and 2.6.1): the tarball must be the
  // profile's release, as an NVIDIA tree must be the profile's driver version.
  const auto h = root.read_text(sys::join(s.dir, "src/gdrdrv/gdrdrv.h"));
  const auto hv = h ? dkms::gdrdrv_header_version(*h) : std::nullopt;
  const auto dot = d.version.find('.', d.version.find('.') + 1);
  const std::string want = d.version.substr(0, dot);
  if (!hv) {
    return Error{"the gdrcopy source has no GDRDRV_MAJOR_VERSION/GDRDRV_MINOR_VERSION in src/gdrdrv/gdrdrv.h"};
  }
  if (*hv != want) {
    return Error{"the gdrcopy source is gdrdrv " + *hv +
                 " (src/gdrdrv/gdrdrv.h) but the profile's gdrcopy.version is " + d.version +
                 ": the module and the library must be the same release"};
  }
  s.modules = {"gdrdrv"};
  return dkms::gdrdrv_conf(t.name, t.version, against);
}

// Any other Kbuild tree: the modules its Kbuild and Makefile name (obj-m).
dkms::Conf stage_conf_kbuild(const sys::SysRoot& root, const ModuleTarget& t,
                             const std::vector<std::string>& patch_names, Staged& s) {
  std::string mk;
  for (const char* f : {"Kbuild", "Makefile"}) {
    if (auto text = root.read_text(sys::join(s.dir, f))) { mk += *text + "\n"; }
  }
  s.modules = dkms::kbuild_modules(mk);
  return dkms::kbuild_conf(t.name, t.version, s.modules, patch_names);
}

}  // namespace

// Copies (or unpacks) the verified source and patches into the staging directory and writes dkms.conf.
Result<Staged> stage(const sys::SysRoot& root, sys::CommandRunner& runner, const DriverSpec& d, const ModuleTarget& t,
                     const Fetched& src, const std::vector<PatchFile>& patches) {
  Staged s;
  const std::string stage_parent = std::string(kStateDir) + "/stage";
  s.dir = sys::join(stage_parent, t.dir_name());
  (void)root.remove_tree(s.dir);
  if (auto st = root.make_dirs(s.dir); !st) { return st.error(); }
  // A refused tree leaves nothing behind in the staging folder, whichever step refused it.
  auto refuse = [&](const Error& e) {
    (void)root.remove_tree(s.dir);
    return e;
  };
  if (src.is_dir) {
    if (auto st = root.copy_tree(src.path, s.dir); !st) { return refuse(st.error()); }
  } else if (auto st = unpack_source(root, runner, src.path, s.dir); !st) {
    return refuse(st.error());
  }
  if (auto st = check_staged_tree(root, s.dir, !patches.empty()); !st) { return refuse(st.error()); }
  const auto top = root.list_dir(s.dir);
  const std::string& against = d.kernel_module->nvidia_src_dir;
  s.kind = against.empty() ? dkms::classify_tree(top) : dkms::TreeKind::gdrdrv;
  std::vector<std::string> patch_names, patch_match;
  if (!patches.empty()) {
    auto names = stage_patch_files(root, d, patches, s);
    if (!names) { return refuse(names.error()); }
    patch_names = std::move(names.value());
    for (const auto& p : patches) { patch_match.push_back(p.match); }
  }
  auto conf = s.kind == dkms::TreeKind::nvidia_open ? stage_conf_nvidia_open(root, d, t, patches, patch_names, s)
              : s.kind == dkms::TreeKind::gdrdrv    ? stage_conf_gdrdrv(root, d, t, against, s)
                                                    : Result<dkms::Conf>(stage_conf_kbuild(root, t, patch_names, s));
  if (!conf) { return refuse(conf.error()); }
  conf.value().patch_match = patch_match;
  if (s.modules.empty()) {
    return refuse(
        Error{"the source tree builds no module that p2pnode can name (no kernel-open/nvidia, no obj-m in "
              "Makefile/Kbuild)"});
  }
  if (auto why = dkms::unsafe_value(*conf)) { return refuse(Error{"writing " + s.dir + "/dkms.conf: " + *why}); }
  s.conf_text = dkms::render(*conf);
  if (auto st = root.write_file_atomic(sys::join(s.dir, "dkms.conf"), s.conf_text); !st) { return refuse(st.error()); }
  return s;
}

}  // namespace p2pnode::lifecycle
