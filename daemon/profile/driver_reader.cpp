#include "profile/driver_reader.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "core/driver_version.hpp"
#include "core/grammar.hpp"
#include "nvidia/breakage.hpp"
#include "profile/artifact_reader.hpp"
#include "profile/input_rules.hpp"

namespace p2pnode::profile {
namespace {

// driver.userspace.flags reach the root installer's argv after --silent --no-kernel-modules: only
// options that name no file or path and leave DKMS to p2pnode (grammar::kInstallerFlags).
void check_installer_flags(MapReader& u) {
  const YAML::Node flags = u.get("flags");
  if (!flags.IsDefined() || !flags.IsSequence()) {
    return;  // an absent key is a zombie node: Type() throws
  }
  for (std::size_t i = 0; i < flags.size(); ++i) {
    if (!flags[i].IsScalar() || grammar::is_installer_flag(flags[i].Scalar())) { continue; }
    std::string list;
    for (const auto f : grammar::kInstallerFlags) { list += (list.empty() ? "" : ", ") + std::string(f); }
    u.diag().add(
        flags[i], u.child_path("flags") + "[" + std::to_string(i) + "]",
        "expected one of the NVIDIA installer's options that name no file or path and leave the kernel "
        "module to p2pnode (" +
            list + "), found '" + printable(flags[i].Scalar()) + "'" +
            (flags[i].Scalar().rfind("--dkms", 0) == 0 ? " (p2pnode builds the module through DKMS itself)" : ""));
  }
}

// driver.kernel_module: the module's name, source, patches (each a builtin or an artifact whose file
// name DKMS reads), signing and BAR1 mapping.
ModuleSource read_kernel_module(MapReader& k) {
  ModuleSource ms;
  if (auto n = k.string("name")) { ms.name = *n; }
  if (auto b = k.choice("bar1", {"full", "window"})) {
    ms.bar1 = *b == "window" ? Bar1Mapping::window : Bar1Mapping::full;
  }
  expect_string(k, "name", grammar::is_dkms_name, kDkmsNameRule);
  if (auto sg = k.map("signing", {"key", "certificate"})) {
    ModuleSigning signing;
    for (auto [field, out] :
         {std::pair<const char*, std::string*>{"key", &signing.key}, {"certificate", &signing.certificate}}) {
      if (auto v = sg->string(field, true)) {
        expect_string(*sg, field, grammar::is_safe_absolute_path,
                      std::string("the module signing ") + field + " as " + kSafePathRule);
        *out = *v;
      }
    }
    ms.signing = signing;
  }
  k.require("source");
  if (auto a = read_artifact(k, "source", "the module's source")) { ms.artifact = *a; }
  const auto patches = k.sequence("patches");
  for (std::size_t i = 0; i < patches.size(); ++i) {
    const std::string path = k.child_path("patches") + "[" + std::to_string(i) + "]";
    if (patches[i].IsMap() && patches[i]["builtin"].IsDefined()) {
      if (auto pa = read_builtin_patch(patches[i], path, k.diag())) { ms.patches.push_back(*pa); }
    } else if (auto pa = read_artifact_node(patches[i], path, k.diag())) {
      // DKMS reads the patch by the file name p2pnode gives it, the URL's or path's last segment.
      const std::string src = pa->url ? *pa->url : pa->path.value_or("");
      std::string file = src.substr(0, src.find_first_of("?#"));
      file = file.substr(file.rfind('/') + 1);
      if (!src.empty() && !grammar::is_safe_file_name(file)) {
        k.diag().add(patches[i], path, std::string("expected ") + kPatchFileRule + ", found '" + printable(file) + "'");
      }
      ms.patches.push_back(*pa);
    }
  }
  return ms;
}

// driver.options: NVreg_* option names and values, each by its grammar, no key twice.
void read_nvreg_options(MapReader& m, const YAML::Node& o, DriverSpec& d) {
  if (!o.IsMap()) {
    m.diag().add(o, m.child_path("options"), "expected a mapping of NVreg_* options, found " + describe_node(o));
  } else {
    // Re-read without the unknown-key check: option names are free-form NVreg_* words. A key written
    // twice is refused here as MapReader refuses one (yaml-cpp keeps both; the last would win).
    std::map<std::string, YAML::Mark> seen;
    for (const auto& kv : o) {
      const std::string k = kv.first.Scalar();
      if (auto [it, fresh] = seen.emplace(k, kv.first.Mark()); !fresh) {
        m.diag().add(kv.first, m.child_path("options." + k),
                     "duplicate key '" + printable(k) + "' (each option may appear once; the first is at line " +
                         std::to_string(it->second.line + 1) + ")");
      } else if (!grammar::is_nvreg_key(k)) {
        m.diag().add(kv.first, m.child_path("options." + k),
                     std::string("expected ") + kNvregKeyRule + ", found '" + printable(k) + "'" +
                         (k.rfind("RM", 0) == 0
                              ? " (registry keys such as " + k + " go inside NVreg_RegistryDwords: \"" + k + "=1\")"
                              : std::string()));
      } else if (!kv.second.IsScalar()) {
        m.diag().add(kv.second, m.child_path("options." + k),
                     "expected a scalar value, found " + describe_node(kv.second));
      } else if (!grammar::is_nvreg_value(kv.second.Scalar())) {
        m.diag().add(kv.second, m.child_path("options." + k),
                     std::string("expected ") + kNvregValueRule + ", found '" + printable(kv.second.Scalar()) + "'");
      } else {
        d.module_options[k] = kv.second.Scalar();
      }
    }
  }
}

}  // namespace

void read_driver(MapReader& root, Profile& p) {
  auto m = root.map("driver", {"version", "userspace", "kernel_module", "options", "conflicts", "reload",
                               "allow_boot_without_module"});
  if (!m) { return; }
  DriverSpec d;
  if (auto v = m->string("version", true)) {
    if (!is_driver_version(*v)) {
      m->diag().add(m->get("version"), m->child_path("version"),
                    "expected an NVIDIA driver version such as 550.90.07, found '" + printable(*v) + "'");
    }
    d.version = *v;
  }
  d.allow_boot_without_module = m->boolean("allow_boot_without_module").value_or(false);
  if (auto u = m->map("userspace", {"installer", "flags"})) {
    d.userspace_installer = read_artifact(*u, "installer", "the userspace installer");
    if (!u->has("installer")) { u->require("installer"); }
    d.installer_flags = u->string_list("flags");
    check_installer_flags(*u);
  }
  if (auto k = m->map("kernel_module", {"name", "source", "patches", "signing", "bar1"})) {
    d.kernel_module = read_kernel_module(*k);
  }
  if (const YAML::Node o = m->get("options"); o.IsDefined()) { read_nvreg_options(*m, o, d); }
  if (auto c = m->choice("conflicts", {"report", "remove"})) {
    d.conflicts = *c == "remove" ? ConflictPolicy::remove : ConflictPolicy::report;
  }
  if (auto r = m->map("reload", {"allow", "stop_units", "kill_holders"})) {
    d.allow_reload = r->boolean("allow").value_or(false);
    d.stop_units = r->string_list("stop_units");
    for (std::size_t i = 0; i < d.stop_units.size(); ++i) {
      if (!grammar::is_unit_name(d.stop_units[i])) {
        r->diag().add(r->get("stop_units")[i], r->child_path("stop_units") + "[" + std::to_string(i) + "]",
                      std::string("expected ") + kUnitRule + ", found '" + printable(d.stop_units[i]) + "'");
      }
    }
    d.allow_kill_holders = r->boolean("kill_holders").value_or(false);
  }
  p.driver = d;
}

}  // namespace p2pnode::profile
