#include "dkms/conf.hpp"

#include <algorithm>
#include <sstream>

#include "core/grammar.hpp"

namespace p2pnode::dkms {
namespace {
bool has(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// DKMS sources dkms.conf with bash, then echoes each value back inside "…" and sources that again
// (safe_source): values are single-quoted here and must hold nothing "…" would expand.
std::string shell_quoted(std::string_view v) { return grammar::shell_quote(v); }
}  // namespace

TreeKind classify_tree(const std::vector<std::string>& top) {
  return has(top, "kernel-open") && has(top, "src") ? TreeKind::nvidia_open : TreeKind::kbuild;
}

std::vector<std::string> nvidia_modules(const std::vector<std::string>& entries) {
  std::vector<std::string> out;
  for (const char* m : {"nvidia", "nvidia-uvm", "nvidia-modeset", "nvidia-drm", "nvidia-peermem"}) {
    if (has(entries, m)) { out.emplace_back(m); }
  }
  return out;
}

std::vector<std::string> kbuild_modules(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string var, op, w;
    if (!(words >> var >> op)) { continue; }
    if (var != "obj-m" || (op != "+=" && op != ":=" && op != "=")) { continue; }
    while (words >> w) {
      if (w.front() == '#') { break; }
      if (w.size() > 2 && w.compare(w.size() - 2, 2, ".o") == 0 && !has(out, w.substr(0, w.size() - 2))) {
        out.push_back(w.substr(0, w.size() - 2));
      }
    }
  }
  return out;
}

std::optional<std::string> nvidia_tree_version(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string var, op, v;
    if (words >> var >> op >> v && var == "NVIDIA_VERSION" && (op == "=" || op == ":=" || op == "?=")) { return v; }
  }
  return std::nullopt;
}

Conf nvidia_open_conf(const std::string& name, const std::string& version, const std::vector<std::string>& modules,
                      const std::vector<std::string>& patches, bool prebuilt_core) {
  Conf c;
  c.package_name = name;
  c.package_version = version;
  // KERNEL_UNAME picks /lib/modules/<kernel>/{source,build} (Debian splits the headers in two).
  c.make = prebuilt_core ? "'make' -j$(nproc) -C kernel-open modules KERNEL_UNAME=${kernelver}"
                         : "'make' -j$(nproc) modules KERNEL_UNAME=${kernelver}";
  for (const auto& m : modules) { c.modules.push_back({m, "kernel-open/"}); }
  c.patches = patches;
  return c;
}

Conf kbuild_conf(const std::string& name, const std::string& version, const std::vector<std::string>& modules,
                 const std::vector<std::string>& patches) {
  Conf c;
  c.package_name = name;
  c.package_version = version;
  c.make = "'make' -C ${kernel_source_dir} M=${dkms_tree}/${PACKAGE_NAME}/${PACKAGE_VERSION}/build modules";
  for (const auto& m : modules) { c.modules.push_back({m, ""}); }
  c.dest_location = "/extra";
  c.patches = patches;
  return c;
}

std::optional<std::string> gdrdrv_header_version(std::string_view text) {
  std::optional<std::string> major, minor;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string define, name, value;
    if (!(words >> define >> name >> value) || define != "#define") { continue; }
    if (value.find_first_not_of("0123456789") != std::string::npos) { continue; }
    if (name == "GDRDRV_MAJOR_VERSION") { major = value; }
    if (name == "GDRDRV_MINOR_VERSION") { minor = value; }
  }
  if (!major || !minor) { return std::nullopt; }
  return *major + "." + *minor;
}

Conf gdrdrv_conf(const std::string& name, const std::string& version, const std::string& nvidia_src_dir) {
  Conf c;
  c.package_name = name;
  c.package_version = version;
  // gdrdrv's Makefile passes M=$(PWD) to Kbuild and finds its conftests at $(PWD)/../../scripts:
  // it must run from src/gdrdrv itself (make -C would leave PWD at the tree's root).
  // The directory is single-quoted for the eval DKMS runs MAKE[0] through, after its two reads.
  c.make = "cd src/gdrdrv && 'make' KVER=${kernelver} NVIDIA_SRC_DIR=" + grammar::shell_quote(nvidia_src_dir) +
           " NVIDIA_IS_OPENSOURCE=y";
  c.make_inputs = {nvidia_src_dir};
  c.modules.push_back({"gdrdrv", "src/gdrdrv/"});
  c.dest_location = "/kernel/drivers/misc";
  c.written_from = "gdrcopy";
  return c;
}

std::string render(const Conf& c) {
  std::ostringstream o;
  o << "# Written by p2pnode from the profile's " << c.written_from << "; `p2pnode apply` rewrites it.\n";
  o << "PACKAGE_NAME=" << shell_quoted(c.package_name) << "\n";
  o << "PACKAGE_VERSION=" << shell_quoted(c.package_version) << "\n";
  o << "# 'make' is quoted so DKMS does not prepend KERNELRELEASE= (NVIDIA's Makefile would think Kbuild ran it).\n";
  o << "MAKE[0]=" << shell_quoted(c.make) << "\n";
  for (std::size_t i = 0; i < c.modules.size(); ++i) {
    o << "BUILT_MODULE_NAME[" << i << "]=" << shell_quoted(c.modules[i].name) << "\n";
    if (!c.modules[i].location.empty()) {
      o << "BUILT_MODULE_LOCATION[" << i << "]=" << shell_quoted(c.modules[i].location) << "\n";
    }
    o << "DEST_MODULE_LOCATION[" << i << "]=" << shell_quoted(c.dest_location) << "\n";
  }
  for (std::size_t i = 0; i < c.patches.size(); ++i) {
    o << "PATCH[" << i << "]=" << shell_quoted(c.patches[i]) << "\n";
    if (i < c.patch_match.size() && !c.patch_match[i].empty()) {
      o << "PATCH_MATCH[" << i << "]=" << shell_quoted(c.patch_match[i]) << "\n";
    }
  }
  if (c.autoinstall) { o << "AUTOINSTALL='yes'\n"; }
  return o.str();
}

std::optional<std::string> unsafe_value(const Conf& c) {
  auto bad = [](std::string_view what, std::string_view v) -> std::optional<std::string> {
    if (grammar::survives_dkms_resource(v)) { return std::nullopt; }
    return std::string(what) + " '" + std::string(v.substr(0, 200)) +
           "' holds a control character, $, `, \" or \\, which DKMS would read as shell when it re-reads dkms.conf";
  };
  if (auto e = bad("PACKAGE_NAME", c.package_name)) { return e; }
  if (auto e = bad("PACKAGE_VERSION", c.package_version)) { return e; }
  for (const auto& v : c.make_inputs) {
    if (auto e = v.find('\'') != std::string::npos ? std::optional<std::string>("MAKE[0]'s " + v + " holds a quote")
                                                   : bad("a value in MAKE[0]", v)) {
      return e;
    }
  }
  for (const auto& m : c.modules) {
    if (auto e = bad("BUILT_MODULE_NAME", m.name)) { return e; }
    if (auto e = bad("BUILT_MODULE_LOCATION", m.location)) { return e; }
  }
  if (auto e = bad("DEST_MODULE_LOCATION", c.dest_location)) { return e; }
  for (const auto& v : c.patches) {
    if (auto e = bad("PATCH", v)) { return e; }
  }
  for (const auto& v : c.patch_match) {
    if (auto e = bad("PATCH_MATCH", v)) { return e; }
  }
  return std::nullopt;
}

std::optional<std::string> without_autoinstall(std::string_view text) {
  std::string out;
  bool found = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    const auto next = end == std::string_view::npos ? text.size() : end + 1;
    const auto line = text.substr(pos, next - pos);
    if (line.starts_with("AUTOINSTALL=")) {
      found = true;
    } else {
      out += line;
    }
    pos = next;
  }
  if (!found) { return std::nullopt; }
  return out;
}

}  // namespace p2pnode::dkms
