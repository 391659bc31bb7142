#include "lifecycle/own_modules.hpp"

#include <algorithm>
#include <array>

namespace p2pnode::lifecycle {
namespace {

// What p2pnode builds on purpose, as kernel_module_name gives them.
constexpr std::array<std::string_view, 6> kOwnedNames = {"nvidia",     "nvidia_uvm",     "nvidia_modeset",
                                                         "nvidia_drm", "nvidia_peermem", "gdrdrv"};
constexpr std::array<std::string_view, 4> kModuleSuffixes = {".ko", ".ko.xz", ".ko.zst", ".ko.gz"};
// kernel/ is a few levels deep (kernel/drivers/net/ethernet/intel/ice); a bound on the walk.
constexpr int kMaxModuleDepth = 12;

bool module_file(std::string_view name) {
  return std::any_of(kModuleSuffixes.begin(), kModuleSuffixes.end(), [&](std::string_view s) {
    return name.size() > s.size() && name.substr(name.size() - s.size()) == s;
  });
}

void walk_modules(const sys::SysRoot& root, const std::string& dir, int depth,
                  std::map<std::string, std::string>& out) {
  if (depth > kMaxModuleDepth) { return; }
  for (const auto& e : root.list_dir(dir)) {
    const std::string p = sys::join(dir, e);
    const auto info = root.lstat(p);
    if (!info) { continue; }
    if (info->type == sys::FileType::directory) {
      walk_modules(root, p, depth + 1, out);
    } else if (module_file(e)) {
      out.emplace(kernel_module_name(e), p);
    }
  }
}

}  // namespace

std::string kernel_module_name(std::string_view file_name) {
  const auto slash = file_name.rfind('/');
  if (slash != std::string_view::npos) { file_name.remove_prefix(slash + 1); }
  for (auto s : kModuleSuffixes) {
    if (file_name.size() > s.size() && file_name.substr(file_name.size() - s.size()) == s) {
      file_name.remove_suffix(s.size());
      break;
    }
  }
  std::string out(file_name);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

bool is_kernel_module_name(std::string_view name) {
  return !name.empty() && name.size() <= 55 &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
             std::string_view::npos;
}

std::map<std::string, std::string> kernel_own_modules(const sys::SysRoot& root, const std::string& kernel) {
  std::map<std::string, std::string> out;
  const std::string base = sys::join("/lib/modules", kernel);
  walk_modules(root, sys::join(base, "kernel"), 0, out);
  // Built in: no file to find, and a module of its name could never load anyway.
  if (auto text = root.read_text(sys::join(base, "modules.builtin"), 16 << 20)) {
    std::size_t start = 0;
    while (start < text->size()) {
      auto end = text->find('\n', start);
      if (end == std::string::npos) { end = text->size(); }
      const std::string line = text->substr(start, end - start);
      start = end + 1;
      if (module_file(line)) {
        out.emplace(kernel_module_name(line), sys::join(base, "modules.builtin") + ": " + line);
      }
    }
  }
  return out;
}

Status refuse_kernel_own_modules(const sys::SysRoot& root, const std::vector<std::string>& modules,
                                 const std::vector<std::string>& kernels) {
  for (const auto& m : modules) {
    if (!is_kernel_module_name(m)) {
      return Error{"the tree builds a module named '" + m +
                   "': expected a kernel module name of letters, digits, '_' "
                   "and '-', at most 55"};
    }
  }
  for (const auto& k : kernels) {
    std::map<std::string, std::string> own;
    bool read = false;
    for (const auto& m : modules) {
      const std::string name = kernel_module_name(m);
      if (std::find(kOwnedNames.begin(), kOwnedNames.end(), name) != kOwnedNames.end()) { continue; }
      if (!read) {
        own = kernel_own_modules(root, k);
        read = true;
      }
      if (const auto it = own.find(name); it != own.end()) {
        return Error{"the tree builds the module " + m + ", which is one of kernel " + k + "'s own (" + it->second +
                     "): DKMS's copy would replace it (and driver.conflicts: remove would move it aside); p2pnode "
                     "builds only NVIDIA's modules and gdrdrv under their own names, and modules of names the kernel "
                     "does not have"};
      }
    }
  }
  return {};
}

}  // namespace p2pnode::lifecycle
