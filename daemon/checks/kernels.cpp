// driver.kernels: the profile's module is built and installed by DKMS, at the profile's version,
// for every installed kernel, above all for the one the boot loader starts next.
#include <algorithm>
#include <optional>

#include "checks/check.hpp"
#include "core/module_package.hpp"
#include "nvidia/breakage.hpp"
#include "nvidia/forecast.hpp"

namespace p2pnode::checks {

namespace {
// The kernel apt would install next, judged before it lands (lifecycle/next_kernel.hpp).
Finding judge_candidate(const ModuleSource& km, const NextKernelJudged& c) {
  Finding f = make_finding("driver.kernels", c.release, c.keeps_p2p ? Severity::ok : Severity::warning, c.summary);
  f.observed = {{"candidate", true},        {"package_version", c.package_version},
                {"keeps_p2p", c.keeps_p2p}, {"breakages", c.breakages},
                {"fixes", c.fixes},         {"first_error", c.first_error},
                {"make_log", c.make_log}};
  f.expected = {{"module", c.module}, {"state", "builds for the next kernel before it is installed"}};
  if (c.keeps_p2p) { return f; }
  std::vector<std::string> missing;
  for (const auto& fix : c.fixes) {
    if (std::none_of(km.patches.begin(), km.patches.end(),
                     [&](const Artifact& a) { return a.builtin && *a.builtin == fix; })) {
      missing.push_back(fix);
    }
  }
  f.remediation =
      missing.empty()
          ? "Hold the kernel (apt-mark hold the kernel metapackage) until the module builds for " + c.release +
                " (make.log: " + c.make_log + "), then judge again with `p2pnode judge-kernel`."
          : "Add {builtin: " + missing.front() +
                "} to driver.kernel_module.patches and apply, then judge again "
                "with `p2pnode judge-kernel`; until then hold the kernel (apt-mark hold the kernel metapackage).";
  return f;
}
// The compiler the kernel's headers were made with is not installed: DKMS would fail ("gcc-14 not
// found", the Ubuntu HWE failure) after apt and minutes of work; said before any build.
std::optional<Finding> missing_compiler(const std::string& want, const InstalledKernel& k) {
  if (k.compiler_command.empty() || k.compiler_present) { return std::nullopt; }
  Finding f = make_finding("driver.kernels", k.release, Severity::error,
                           "DKMS cannot build " + want + " for " + k.release + ": its headers were made with " +
                               k.compiler_text + ", and " + k.compiler_command + " is not installed");
  f.observed = {{"compiler", k.compiler_text}, {"command", k.compiler_command}, {"installed", false}};
  f.expected = {{"command", "/usr/bin/" + k.compiler_command}};
  f.remediation = k.compiler_package.empty()
                      ? "Install the compiler " + k.compiler_command + " before any build, then `p2pnode apply`."
                      : "Before any build: apt-get install " + k.compiler_package + " (it brings /usr/bin/" +
                            k.compiler_command + "), then `p2pnode apply`.";
  return f;
}
// nvidia.ko files no DKMS package installed (the .run installer's): modprobe resolving one while the
// profile's DKMS build is installed is an error (the patched build does not load); one in updates/,
// where DKMS installs and depmod looks first, a warning (it competes with the DKMS build). A copy in
// kernel/drivers/video that the DKMS build outranks is left alone.
std::vector<Finding> foreign_modules(const ModuleSource& km, const std::string& ver, const InstalledKernel& k) {
  const std::string want = km.name + "/" + ver;
  const bool installed = std::any_of(k.dkms.begin(), k.dkms.end(), [&](const DkmsOnKernel& d) {
    return d.package == km.name && d.version == ver && d.installed;
  });
  std::vector<Finding> out;
  for (const auto& path : k.foreign_nvidia) {
    const bool resolved = path == k.modprobe_nvidia && installed;
    if (!resolved && path.find("/updates/") == std::string::npos) { continue; }
    Finding f =
        make_finding("driver.kernels", k.release, resolved ? Severity::error : Severity::warning,
                     resolved ? "modprobe resolves nvidia on " + k.release + " to " + path +
                                    ", which DKMS did not install: it loads instead of the DKMS build of " + want
                              : path + " on " + k.release +
                                    " was not installed by DKMS (the .run installer's "
                                    "copy) and lies in updates/, where DKMS installs " +
                                    want + " and modprobe looks first");
    f.observed = {{"file", path}, {"modprobe_resolves", k.modprobe_nvidia}, {"from_dkms", false}};
    f.expected = {
        {"modprobe_resolves", "the DKMS build of " + want + " (/lib/modules/" + k.release + "/updates/dkms)"}};
    const std::string backup = "/var/lib/p2pnode/shadowed/" + k.release + "/";
    f.remediation = installed ? "Move " + path + " out of /lib/modules (keep it as a backup, e.g. under " + backup +
                                    "), then run `depmod " + k.release + "`."
                              : "Run `p2pnode apply`: before DKMS builds " + want + " it moves " + path + " to " +
                                    backup + " (a backup, never deleted), and DKMS's install runs depmod.";
    out.push_back(std::move(f));
  }
  return out;
}
// Another DKMS registration that installs an nvidia module on this kernel: the forks' own dkms.conf
// (PACKAGE_NAME nvidia, AUTOINSTALL) and NVIDIA's `.run --dkms` register one beside the profile's. Both
// install into updates/dkms under the same file names, so modprobe loads whichever DKMS installed last,
// and AUTOINSTALL rebuilds the other for every new kernel: a warning naming it, with how apply resolves it.
std::vector<Finding> other_dkms_nvidia(const DriverSpec& d, const InstalledKernel& k) {
  std::vector<Finding> out;
  const std::string want = module_package(d).dkms_id();
  for (const auto& o : k.dkms) {
    if ((o.package == d.kernel_module->name && o.version == d.version) || !o.installed) { continue; }
    std::vector<std::string> nvidia;
    for (const auto& m : o.modules) {
      const std::string base = m.substr(m.rfind('/') + 1);
      if (base.rfind("nvidia.ko", 0) == 0 || base.rfind("nvidia-uvm.ko", 0) == 0) { nvidia.push_back(m); }
    }
    if (nvidia.empty()) { continue; }
    std::sort(nvidia.begin(), nvidia.end());  // nvidia.ko* named first
    std::stable_partition(nvidia.begin(), nvidia.end(),
                          [](const std::string& m) { return m.substr(m.rfind('/') + 1).rfind("nvidia.ko", 0) == 0; });
    const std::string other = o.package + "/" + o.version;
    Finding f = make_finding("driver.kernels", k.release, Severity::warning,
                             "DKMS package " + other + " (not the profile's " + want + ") installs " + nvidia.front() +
                                 " on " + k.release + ": modprobe loads whichever DKMS installed last");
    f.observed = {{"dkms_package", other}, {"files", nvidia}, {"profile_module", want}};
    f.expected = {{"dkms_packages_installing_nvidia", {want}}};
    f.remediation =
        d.conflicts == ConflictPolicy::remove
            ? "Run `p2pnode apply`: once " + want + " is built and installed it removes " + other +
                  " from DKMS (dkms remove --all; its source stays in /usr/src/" + o.package + "-" + o.version +
                  ", so `dkms add` brings it back), reinstalls its own files if DKMS took them, and runs depmod."
            : "Set driver.conflicts: remove and run `p2pnode apply`: once " + want + " is built it removes " + other +
                  " from DKMS (its source stays in /usr/src/" + o.package + "-" + o.version +
                  "), reinstalls its own files and runs depmod. A fork's own dkms.conf "
                  "(PACKAGE_NAME nvidia, AUTOINSTALL) and NVIDIA's .run --dkms register such a package.";
    out.push_back(std::move(f));
  }
  return out;
}

// The forecast of the coming DKMS build for one kernel with headers, into its finding `f` (then `f`
// and any run-time warnings go to `out`): the known stops, in table order, with the first release
// past them; what is not known either way (a release newer than every one known to hit an entry);
// display-only notes. From the tree's own source where it was read (staged, a path: tree, p2pnode's
// git cache), else from the version.
void forecast_build(Finding& f, std::vector<Finding>& out, const DriverSpec& d, const Inventory& inv,
                    const InstalledKernel& k, const std::string& name, bool built, const std::string& after) {
  const std::string ver = d.version, want = module_package(d).dkms_id();
  const auto tree = nvidia::tree_source_tests(inv, d);
  const auto builtins = nvidia::builtin_patches_of(*d.kernel_module);
  const auto& table = nvidia::builtin_breakages();
  const auto predicted = nvidia::predict_breakages(table, ver, k.release, k.header_tests, builtins, tree.tests);
  const auto unknown = nvidia::beyond_evidence(table, ver, k.release, k.header_tests, builtins, tree.tests);
  std::vector<const nvidia::PredictedBreakage*> stops;
  nlohmann::json ids = nlohmann::json::array(), fixed = nlohmann::json::array(), notes = nlohmann::json::array();
  for (const auto& pb : predicted) {
    if (pb.breakage->stage == nvidia::BreakageStage::display) {
      if (!pb.fixed) { notes.push_back(pb.describe(ver, k.release) + " Fix: " + pb.breakage->remediation + "."); }
      continue;
    }
    (pb.fixed ? fixed : ids).push_back(pb.breakage->id);
    if (!pb.fixed && pb.breakage->stage == nvidia::BreakageStage::build) { stops.push_back(&pb); }
  }
  if (!ids.empty() || !fixed.empty()) {
    f.observed["predicted_breakages"] = ids, f.observed["fixed_by_profile"] = fixed;
  }
  if (!notes.empty()) { f.observed["display_notes"] = notes; }
  f.observed["forecast_from"] = tree.where.empty() ? "version" : "source of " + tree.where;
  std::string beyond;
  if (!unknown.empty()) {
    nlohmann::json u = nlohmann::json::array();
    for (const auto* b : unknown) {
      u.push_back({{"id", b->id}, {"newest_known_affected", nvidia::newest_affected(*b)}});
      beyond += std::string(beyond.empty() ? "" : ", ") + b->id + " (known up to " + nvidia::newest_affected(*b) + ")";
    }
    f.observed["beyond_evidence"] = u;
    std::string builtins_hint;
    for (const auto* b : unknown) {
      if (b->fix_builtin) {
        builtins_hint += std::string(builtins_hint.empty() ? "" : ", ") + "{builtin: " + *b->fix_builtin + "}";
      }
    }
    beyond = " Not known either way for " + ver + ": " + beyond + "; nothing known says " + ver +
             " carries the fix or not, so apply reads the tree's source before it builds and refuses where it still "
             "has the old code" +
             (builtins_hint.empty() ? std::string(".")
                                    : " (then add " + builtins_hint + " to driver.kernel_module.patches).");
  }
  if (stops.empty()) {
    f.summary = want + " is not " + (built ? "installed" : "built") + " for " + name + after;
    f.remediation =
        "Run `p2pnode apply`: it builds and installs " + want + " through DKMS for " + k.release + "." + beyond;
  } else {
    const auto* stop = stops.front();
    std::string why = stop->describe(ver, k.release);
    if (!after.empty() && !why.empty() && why.back() == '.') {
      why.pop_back();  // "….; a reboot now …"
    }
    f.summary = want + " will not build for " + name + ": " + why + after;
    nlohmann::json stop_ids = nlohmann::json::array();
    for (const auto* s : stops) { stop_ids.push_back(s->breakage->id); }
    f.observed["build_stops"] = stop_ids;
    std::string more;
    if (stops.size() > 1) {
      more = " Past it the build also meets";
      for (std::size_t i = 1; i < stops.size(); ++i) {
        more += std::string(i > 1 ? "," : "") + " " + stops[i]->breakage->id;
      }
      more += ".";
    }
    const auto on_kernel = nvidia::build_entries_on_kernel(k.release, k.header_tests);
    if (const auto r = nvidia::first_release_past(on_kernel)) {
      f.observed["first_release_that_builds"] = *r;
      more += " The first NVIDIA release known to build on " + k.release + ": " + *r + ".";
    } else {
      more += " " + nvidia::no_release_past(on_kernel, k.release, k.header_tests);
    }
    f.remediation =
        "Before any build: " + stop->breakage->remediation + "." + more + beyond +
        (tree.where.empty() ? " (Forecast from the version: apply reads the tree's source once it is staged, "
                              "and builds a tree that carries its own fix.)"
                            : " (Read from the tree's source in " + tree.where + ".)");
  }
  out.push_back(std::move(f));
  for (const auto& pb : predicted) {
    if (!pb.fixed && pb.breakage->stage == nvidia::BreakageStage::runtime) {
      Finding w = make_finding("driver.kernels", k.release, Severity::warning, pb.describe(ver, k.release));
      w.observed = {{"predicted_breakages", {pb.breakage->id}}};
      w.expected = {{"patches", {pb.breakage->fix_builtin.value_or("")}}};
      w.remediation = pb.breakage->remediation + ".";
      out.push_back(std::move(w));
    }
  }
}
}  // namespace

std::vector<Finding> check_driver_kernels(const Profile& p, const Inventory& inv) {
  std::vector<Finding> out;
  if (!p.driver || !p.driver->kernel_module) { return out; }
  const std::string pkg = p.driver->kernel_module->name, ver = p.driver->version;
  const std::string want = pkg + "/" + ver;
  for (const auto& k : inv.kernels.kernels) {
    std::string role;
    if (k.running) { role += "running"; }
    if (k.next_boot) { role += std::string(role.empty() ? "" : ", ") + "next boot"; }
    const std::string name = k.release + (role.empty() ? "" : " (" + role + ")");
    Finding f = make_finding("driver.kernels", k.release, Severity::ok, "");
    f.expected = {{"module", want}, {"state", "installed"}};
    f.observed = {{"headers", k.headers}, {"running", k.running}, {"next_boot", k.next_boot}};
    if (k.next_boot) { f.observed["next_boot_how"] = inv.kernels.next_boot_how; }
    bool installed = false, built = false;
    nlohmann::json dk = nlohmann::json::array();
    for (const auto& d : k.dkms) {
      dk.push_back(d.package + "/" + d.version + (d.installed ? " installed" : d.built ? " built" : " added"));
      if (d.package == pkg && d.version == ver) {
        installed = d.installed;
        built = d.built;
      }
    }
    f.observed["dkms"] = dk;
    const FailedBuild* failed = nullptr;
    for (const auto& fb : k.failed) {
      if (fb.package == pkg && fb.version == ver) { failed = &fb; }
    }
    if (installed) {
      f.summary = want + " is built and installed by DKMS for " + name;
      out.push_back(std::move(f));
      continue;
    }
    // The running kernel with the wanted version loaded but not from DKMS (installed by hand, e.g.
    // tinygrad's install.sh): it works until the next kernel; a warning, not an outage.
    const bool loaded_by_hand = k.running && inv.nvidia.loaded_version && *inv.nvidia.loaded_version == ver;
    f.severity = loaded_by_hand ? Severity::warning : Severity::error;
    const std::string after = k.running ? "" : k.next_boot ? "; a reboot now would come up without P2P" : "";
    if (failed) {
      f.summary = want + " is not installed for " + name + ": its DKMS build failed" +
                  (failed->first_error.empty() ? "" : ": " + failed->first_error) + after;
      f.observed["make_log"] = failed->make_log;
      f.observed["first_error"] = failed->first_error;
      f.observed["breakages"] = failed->breakages;
      f.remediation = failed->breakages.empty()
                          ? "Read " + failed->make_log +
                                ", fix the source or add a patch to driver.kernel_module.patches, then `p2pnode apply`."
                          : failed->breakages.front() + " (make.log: " + failed->make_log + ")";
    } else if (loaded_by_hand) {
      f.summary = want + " is loaded on " + name +
                  " but was not installed by DKMS: a kernel update will leave the box "
                  "without it";
      f.remediation = (k.headers ? std::string() : "Install linux-headers-" + k.release + ", then r") +
                      std::string(k.headers ? "R" : "") + "un `p2pnode apply` so that DKMS builds " + want +
                      " for this and every later kernel.";
    } else if (!k.headers) {
      f.summary =
          want + " is not installed for " + name + ": the kernel has no headers, so DKMS cannot build it" + after;
      f.remediation =
          "Install linux-headers-" + k.release + ", then `p2pnode apply` (it builds for every kernel with headers).";
    } else {
      forecast_build(f, out, *p.driver, inv, k, name, built, after);
      if (const auto c = missing_compiler(want, k)) { out.push_back(*c); }
      continue;
    }
    out.push_back(std::move(f));
  }
  for (const auto& k : inv.kernels.kernels) {
    for (auto& x : foreign_modules(*p.driver->kernel_module, ver, k)) { out.push_back(std::move(x)); }
    for (auto& x : other_dkms_nvidia(*p.driver, k)) { out.push_back(std::move(x)); }
  }
  if (const auto& c = inv.kernels.next_candidate; c && c->module == want) {
    const bool installed = std::any_of(inv.kernels.kernels.begin(), inv.kernels.kernels.end(),
                                       [&](const InstalledKernel& k) { return k.release == c->release; });
    if (!installed) { out.push_back(judge_candidate(*p.driver->kernel_module, *c)); }
  }
  return out;
}

}  // namespace p2pnode::checks
