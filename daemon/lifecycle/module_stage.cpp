#include "lifecycle/module_stage.hpp"

#include <cstdio>
#include <filesystem>

#include "lifecycle/dkms_run.hpp"

namespace p2pnode::nvidia {
namespace fs = std::filesystem;
namespace {

std::string patch_name(std::size_t i, const Artifact& a) {
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "%02zu-", i + 1);
  return prefix + (a.builtin ? *a.builtin + ".patch" : artifact_basename(a));
}

}  // namespace

// Copies (or unpacks) the verified source and patches into the staging directory and writes dkms.conf.
Result<Staged> stage(const sys::SysRoot& root, sys::CommandRunner& runner, const DriverSpec& d,
                     const ModuleTarget& t, const Fetched& src, const std::vector<PatchFile>& patches) {
  Staged s;
  const std::string stage_parent = std::string(kStateDir) + "/stage";
  s.dir = sys::join(stage_parent, t.name + "-" + t.version);
  std::error_code ec;
  fs::remove_all(root.host_path(s.dir), ec);
  if (auto st = root.make_dirs(s.dir); !st) return st.error();
  if (src.is_dir) {
    if (auto st = copy_tree(root.host_path(src.path), root.host_path(s.dir)); !st) return st.error();
  } else {
    sys::Command tar;
    tar.argv = unpack_argv(root.host_path(src.path).string(), root.host_path(s.dir).string());
    tar.timeout = std::chrono::minutes(10);
    const auto r = runner.run(tar);
    if (!r.success()) return Error{"unpacking " + src.path + ": tar " + r.describe() + ": " + r.err, r.exit_code};
    if (auto st = strip_setid(root.host_path(s.dir)); !st) return st.error().with_context("unpacking " + src.path);
    // A tarball with one top directory (open-gpu-kernel-modules-550.90.07-p2p/): use its contents.
    const auto top = root.list_dir(s.dir);
    if (top.size() == 1 && root.is_dir(sys::join(s.dir, top[0]))) {
      const fs::path inner = root.host_path(sys::join(s.dir, top[0]));
      const fs::path tmp = root.host_path(s.dir + ".unpack");
      fs::remove_all(tmp, ec);
      fs::rename(inner, tmp, ec);
      if (!ec) fs::remove_all(root.host_path(s.dir), ec);
      if (!ec) fs::rename(tmp, root.host_path(s.dir), ec);
      if (ec) return Error{"flattening " + s.dir + ": " + ec.message(), ec.value()};
    }
  }
  const auto top = root.list_dir(s.dir);
  const std::string& against = d.kernel_module->nvidia_src_dir;
  s.kind = against.empty() ? dkms::classify_tree(top) : dkms::TreeKind::gdrdrv;
  std::vector<std::string> patch_names, patch_match;
  if (!patches.empty()) {
    if (auto st = root.make_dirs(sys::join(s.dir, "patches")); !st) return st.error();
    for (std::size_t i = 0; i < patches.size(); ++i) {
      patch_names.push_back(patch_name(i, d.kernel_module->patches[i]));
      patch_match.push_back(patches[i].match);
      const std::string to = sys::join(s.dir, "patches", patch_names.back());
      s.patches.push_back(to);
      if (patches[i].from.empty()) {
        if (auto st = root.write_file_atomic(to, patches[i].text); !st) return st.error();
        continue;
      }
      fs::copy_file(root.host_path(patches[i].from), root.host_path(to), fs::copy_options::overwrite_existing, ec);
      if (ec) return Error{"copying patch " + patches[i].from + ": " + ec.message(), ec.value()};
    }
  }
  dkms::Conf conf;
  if (s.kind == dkms::TreeKind::nvidia_open) {
    auto vmk = root.read_text(sys::join(s.dir, "version.mk"));
    const auto tree_version = vmk ? dkms::nvidia_tree_version(*vmk) : std::nullopt;
    if (!tree_version)
      return Error{"the source tree has kernel-open/ and src/ but no NVIDIA_VERSION in version.mk: is it an "
                   "open-gpu-kernel-modules checkout?"};
    if (*tree_version != d.version)
      return Error{"the source tree is version " + *tree_version + " (version.mk) but the profile's driver.version is " +
                   d.version + ": the module and the userspace must be the same version"};
    s.modules = dkms::nvidia_modules(root.list_dir(sys::join(s.dir, "kernel-open")));
        std::vector<std::string> texts(patches.size());
    std::vector<CorePatch> core_patches;
    for (std::size_t i = 0; i < patches.size(); ++i) {
      texts[i] = patches[i].from.empty() ? patches[i].text : root.read_text(s.patches[i], 64 << 20).value_or("");
      core_patches.push_back({patch_names[i], texts[i], patches[i].match});
    }
    s.core = decide_core(core_patches);
    for (const auto& o : kCoreObjects)
      if (s.core.reuse && !root.is_dir(sys::join(s.dir, std::string(o.dir)))) {
        s.core = {};
        s.core.why_not = "the tree has no " + std::string(o.dir) + "/";
      }
    conf = dkms::nvidia_open_conf(t.name, t.version, s.modules, patch_names, s.core.reuse);
  } else if (s.kind == dkms::TreeKind::gdrdrv) {
    if (!root.exists(sys::join(s.dir, "src/gdrdrv/gdrdrv.c")) || !root.is_dir(sys::join(s.dir, "scripts")))
      return Error{"the gdrcopy source has no src/gdrdrv/gdrdrv.c or no scripts/ (its conftests): is it gdrcopy's "
                   "release tarball (github.com/NVIDIA/gdrcopy, v" + d.version + ")?"};
    // gdrdrv's version is the release's major.minor (2.6 for 2.6 and 2.6.1): the tarball must be the
    // profile's release, as an NVIDIA tree must be the profile's driver version.
    const auto h = root.read_text(sys::join(s.dir, "src/gdrdrv/gdrdrv.h"));
    const auto hv = h ? dkms::gdrdrv_header_version(*h) : std::nullopt;
    const auto dot = d.version.find('.', d.version.find('.') + 1);
    const std::string want = d.version.substr(0, dot);
    if (!hv) return Error{"the gdrcopy source has no GDRDRV_MAJOR_VERSION/GDRDRV_MINOR_VERSION in src/gdrdrv/gdrdrv.h"};
    if (*hv != want)
      return Error{"the gdrcopy source is gdrdrv " + *hv + " (src/gdrdrv/gdrdrv.h) but the profile's gdrcopy.version is " +
                   d.version + ": the module and the library must be the same release"};
    s.modules = {"gdrdrv"};
    conf = dkms::gdrdrv_conf(t.name, t.version, against);
  } else {
    std::string mk;
    for (const char* f : {"Kbuild", "Makefile"})
      if (auto text = root.read_text(sys::join(s.dir, f))) mk += *text + "\n";
    s.modules = dkms::kbuild_modules(mk);
    conf = dkms::kbuild_conf(t.name, t.version, s.modules, patch_names);
  }
  conf.patch_match = patch_match;
  if (s.modules.empty())
    return Error{"the source tree builds no module that p2pnode can name (no kernel-open/nvidia, no obj-m in "
                 "Makefile/Kbuild)"};
  if (auto why = dkms::unsafe_value(conf)) return Error{"writing " + s.dir + "/dkms.conf: " + *why};
  s.conf_text = dkms::render(conf);
  if (auto st = root.write_file_atomic(sys::join(s.dir, "dkms.conf"), s.conf_text); !st) return st.error();
  return s;
}

}  // namespace p2pnode::nvidia
